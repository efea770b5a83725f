package io.github.distlock.aop;

import java.util.Collection;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

import io.github.distlock.HeldLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.util.ClassUtils;

/**
 * {@code Mono} and {@code Flux} methods: the lock is taken on subscription without blocking, the method runs once it
 * is held (so nothing it does eagerly runs unlocked), and the lock is released when the publisher completes, fails or
 * is cancelled. Reactor is optional: this class touches its types only through {@link Reactor}, loaded when present.
 */
final class ReactiveLocking {

    private static final boolean REACTOR_PRESENT = ClassUtils.isPresent("reactor.core.publisher.Mono",
            ReactiveLocking.class.getClassLoader());

    private ReactiveLocking() {
    }

    static boolean isMono(Class<?> type) {
        return REACTOR_PRESENT && Reactor.isMono(type);
    }

    static boolean isFlux(Class<?> type) {
        return REACTOR_PRESENT && Reactor.isFlux(type);
    }

    /** Another Reactive Streams publisher, whose operators distlock does not know. */
    static boolean isOtherPublisher(Class<?> type) {
        return ClassUtils.isPresent("org.reactivestreams.Publisher", ReactiveLocking.class.getClassLoader())
                && Streams.isPublisher(type);
    }

    static Object empty(LockOperation.Shape shape) {
        return Reactor.empty(shape);
    }

    static Object lock(LockOperation operation, Collection<String> keys, LockTemplate template, MethodInvocation invocation) {
        return Reactor.lock(operation, keys, template, invocation);
    }

    /** Names only the Reactive Streams interface, which may be present without Reactor. */
    private static final class Streams {

        static boolean isPublisher(Class<?> type) {
            return org.reactivestreams.Publisher.class.isAssignableFrom(type);
        }
    }

    /** Everything that names a Reactor type. */
    private static final class Reactor {

        static boolean isMono(Class<?> type) {
            return type == reactor.core.publisher.Mono.class;
        }

        static boolean isFlux(Class<?> type) {
            return type == reactor.core.publisher.Flux.class;
        }

        static Object empty(LockOperation.Shape shape) {
            return (shape == LockOperation.Shape.MONO) ? reactor.core.publisher.Mono.empty()
                    : reactor.core.publisher.Flux.empty();
        }

        static Object lock(LockOperation operation, Collection<String> keys, LockTemplate template,
                MethodInvocation invocation) {
            // the lock is held by no code of the template's here: a CANCEL is done below, on the method's publisher
            boolean cancel = operation.options().leaseLostPolicy() == io.github.distlock.LeaseLostPolicy.CANCEL;
            reactor.core.publisher.Mono<Hold> acquire = acquire(template, keys,
                    operation.options().withLeaseLostPolicy(null))
                    .map(held -> new Hold(held, CoroutineLocking.watch(operation)))
                    .onErrorMap(LockAcquisitionException.class, NotAcquired::new);
            if (operation.shape() == LockOperation.Shape.MONO) {
                // Mono.usingWhen emits the value once the release has completed: whoever sees it sees the lock free
                return reactor.core.publisher.Mono.usingWhen(acquire,
                        held -> {
                            reactor.core.publisher.Mono<Object> body = reactor.core.publisher.Mono.defer(
                                    () -> reactor.core.publisher.Mono.from(proceed(invocation, held.body())));
                            return cancel ? stopOnLoss(body.flux(), held.lock()).next() : body;
                        },
                        held -> release(held.lock()),
                        (held, failure) -> release(held.lock()),
                        held -> releaseWhenStopped(held))
                        .onErrorResume(NotAcquired.class, notAcquired -> reactor.core.publisher.Mono
                                .defer(() -> reactor.core.publisher.Mono.from(notAcquired(operation, invocation, notAcquired))));
            }
            return reactor.core.publisher.Flux.usingWhen(acquire,
                    held -> {
                        reactor.core.publisher.Flux<Object> body = reactor.core.publisher.Flux.defer(
                                () -> proceed(invocation, held.body()));
                        return cancel ? stopOnLoss(body, held.lock()) : body;
                    },
                    held -> release(held.lock()),
                    (held, failure) -> release(held.lock()),
                    held -> releaseWhenStopped(held))
                    .onErrorResume(NotAcquired.class, notAcquired -> reactor.core.publisher.Flux
                            .defer(() -> notAcquired(operation, invocation, notAcquired)));
        }

        /**
         * The lock, as the resource of {@code usingWhen}. {@code Mono.fromFuture} alone would lose it: a value that
         * arrives after the subscriber cancelled is dropped ({@code Operators.onDiscard}), and a lock acquired just
         * before the cancellation (the future completed, Reactor not yet past its "cancelled?" check) was then held
         * and renewed by the watchdog for nobody until the application stopped.
         *
         * <p>Invariant: a lock the acquisition brings has exactly one owner that releases it, decided once by
         * {@code decided}. Either the value on its way downstream wins it, and {@code usingWhen} owns the lock from
         * there on (it releases on completion, error and cancellation, also on a cancellation that arrives before its
         * {@code onNext}: its deferred subscription cancels the method's subscriber as soon as it exists, and that
         * releases); or the cancellation wins it, stops the wait (the template gives back whatever it still takes)
         * and gives back the lock if the acquisition completed or completes with one: the value, should it still come
         * by, is filtered out. A cancellation after the hand-off finds {@code decided} set and leaves the lock to
         * {@code usingWhen}.
         */
        private static reactor.core.publisher.Mono<HeldLock> acquire(LockTemplate template, Collection<String> keys,
                LockOptions options) {
            return reactor.core.publisher.Mono.defer(() -> {
                CompletableFuture<HeldLock> acquisition = template.acquireAsync(keys, options);
                AtomicBoolean decided = new AtomicBoolean();
                // suppressCancel: the cancellation below cancels the acquisition itself, after deciding the owner
                return reactor.core.publisher.Mono.fromFuture(acquisition, true)
                        .doOnCancel(() -> {
                            if (decided.compareAndSet(false, true)) {
                                acquisition.cancel(false);
                                acquisition.thenAccept(HeldLock::releaseAsync);
                            }
                        })
                        .filter(held -> decided.compareAndSet(false, true));
            });
        }

        /** The error, or the skip or fallback publisher when the method asks for one. */
        @SuppressWarnings("unchecked")
        private static org.reactivestreams.Publisher<Object> notAcquired(LockOperation operation,
                MethodInvocation invocation, NotAcquired notAcquired) {
            if (!operation.handlesNotAcquired()) {
                return reactor.core.publisher.Mono.error(notAcquired.getCause());
            }
            try {
                Object fallback = operation.notAcquired(invocation.getThis(), invocation.getArguments(),
                        (LockAcquisitionException) notAcquired.getCause());
                return (fallback != null) ? (org.reactivestreams.Publisher<Object>) CoroutineLocking.toPublisher(fallback)
                        : reactor.core.publisher.Mono.empty();
            }
            catch (Throwable ex) {
                return reactor.core.publisher.Mono.error(ex);
            }
        }

        @SuppressWarnings("unchecked")
        private static org.reactivestreams.Publisher<Object> proceed(MethodInvocation invocation,
                CoroutineLocking.Watch body) {
            try {
                // a fresh invocation per subscription: a retry or a second subscriber runs the interceptors inside this
                // one (transactions, security) again instead of skipping them
                MethodInvocation call = (invocation instanceof org.springframework.aop.ProxyMethodInvocation proxied)
                        ? ((body != null) ? proxied.invocableClone(body.arguments(invocation.getArguments()))
                                : proxied.invocableClone())
                        : invocation;
                Object publisher = CoroutineLocking.toPublisher(call.proceed());
                return (publisher != null) ? (org.reactivestreams.Publisher<Object>) publisher
                        : reactor.core.publisher.Mono.empty();
            }
            catch (Throwable ex) {
                return reactor.core.publisher.Mono.error(ex);
            }
        }

        /**
         * {@code body}, until the backend reports {@code held} lost: then its subscription is cancelled and the
         * subscriber gets the {@link io.github.distlock.LockLeaseLostException}. ({@code takeUntilOther} is fed a
         * value, not the error: an error of the other publisher would reach the subscriber without cancelling the
         * body.) A loss after the body ended changes nothing.
         */
        private static reactor.core.publisher.Flux<Object> stopOnLoss(reactor.core.publisher.Flux<Object> body,
                HeldLock held) {
            return reactor.core.publisher.Flux.defer(() -> {
                java.util.concurrent.atomic.AtomicReference<io.github.distlock.LockLeaseLostException> stopped =
                        new java.util.concurrent.atomic.AtomicReference<>();
                reactor.core.publisher.Mono<Object> lost = reactor.core.publisher.Mono.create(sink -> {
                    AtomicBoolean live = new AtomicBoolean(true);
                    sink.onDispose(() -> live.set(false));
                    held.whenLost(loss -> {
                        if (live.get()) {
                            stopped.set(loss);
                            sink.success(loss);
                        }
                    });
                });
                return body.takeUntilOther(lost).concatWith(reactor.core.publisher.Mono.defer(() -> {
                    io.github.distlock.LockLeaseLostException loss = stopped.get();
                    return (loss != null) ? reactor.core.publisher.Mono.error(new io.github.distlock.LockLeaseLostException(
                            loss.getKey(), loss.getReason(), null)) : reactor.core.publisher.Mono.empty();
                }));
            });
        }

        private static reactor.core.publisher.Mono<Void> release(HeldLock held) {
            return reactor.core.publisher.Mono.fromFuture(held::releaseAsync, true);
        }

        /** On cancellation: at once, or for a suspend function once its coroutine has stopped working. */
        private static reactor.core.publisher.Mono<Void> releaseWhenStopped(Hold held) {
            return (held.body() == null) ? release(held.lock()) : reactor.core.publisher.Mono.fromFuture(
                    () -> held.body().stopped().thenCompose(stopped -> held.lock().releaseAsync()), true);
        }
    }

    /**
     * The resource of {@code usingWhen}: the lock, and for a suspend function the watch on the coroutine that runs
     * the body (whose work may go on for a while after a cancellation).
     */
    private record Hold(HeldLock lock, CoroutineLocking.Watch body) {
    }

    /** Marks a failure of the acquisition itself, so that one raised by the method's own publisher is never mistaken for it. */
    private static final class NotAcquired extends RuntimeException {

        NotAcquired(LockAcquisitionException cause) {
            super(cause.getMessage(), cause, false, false);
        }
    }

}
