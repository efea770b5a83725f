package io.github.distlock.aop;

import java.lang.reflect.Method;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

import org.springframework.core.KotlinDetector;
import org.springframework.util.ClassUtils;

/**
 * Kotlin {@code suspend} functions and {@code Flow} results. Spring's AOP proxies already adapt a suspend function
 * (with kotlinx-coroutines-reactor present): inside the advice chain its call is a {@code Mono} (a {@code Flux} when it
 * returns a {@code Flow}) that runs the coroutine on subscription, and the proxy awaits what the advice returns. So a
 * suspend function is locked like a {@code Mono}/{@code Flux} method, as Spring's {@code @Transactional} does; a
 * {@code Flow} result is locked as a {@code Flux} and handed back as a {@code Flow}.
 *
 * <p>One difference from Reactor: cancelling a coroutine only asks it to stop, and its {@code finally} blocks (or work
 * in {@code NonCancellable}) run after the cancellation. A {@link Watch} follows the body's coroutine, so that a
 * cancelled call keeps its lock until that work has stopped.
 *
 * <p>Kotlin is optional: this class names Kotlin types only in {@link Kotlin}, loaded when a suspend function or a
 * {@code Flow} is met (which needs Kotlin on the class path).
 */
final class CoroutineLocking {

    /** The class Spring's proxies check before adapting a suspend function. */
    static final boolean REACTOR_BRIDGE_PRESENT = KotlinDetector.isKotlinPresent()
            && ClassUtils.isPresent("kotlinx.coroutines.reactor.MonoKt", CoroutineLocking.class.getClassLoader());

    private static final String FLOW = "kotlinx.coroutines.flow.Flow";

    private CoroutineLocking() {
    }

    static boolean isSuspending(Method method) {
        return KotlinDetector.isKotlinPresent() && KotlinDetector.isSuspendingFunction(method);
    }

    /**
     * The shape of a suspend function or a method returning {@code Flow}; {@code null} for any other method.
     *
     * @throws InvalidAnnotationException when Spring's AOP could not follow the coroutine
     */
    static LockOperation.Shape shape(Method method) {
        boolean suspending = isSuspending(method);
        if (!suspending && !FLOW.equals(method.getReturnType().getName())) {
            return null;
        }
        if (!REACTOR_BRIDGE_PRESENT) {
            throw new InvalidAnnotationException("the method " + (suspending ? "is a suspend function" : "returns a Flow")
                    + ", but kotlinx-coroutines-reactor is not on the class path: without it Spring's AOP cannot "
                    + "follow the coroutine, and the lock would be released at its first suspension",
                    "Add the dependency org.jetbrains.kotlinx:kotlinx-coroutines-reactor");
        }
        if (suspending && !KotlinDetector.isKotlinReflectPresent()) {
            // Spring runs a suspend function through Kotlin reflection (CoroutinesUtils): without it every call fails
            throw new InvalidAnnotationException("the method is a suspend function, but kotlin-reflect is not on the "
                    + "class path: Spring's AOP calls suspend functions through it",
                    "Add the dependency org.jetbrains.kotlin:kotlin-reflect");
        }
        if (!suspending) {
            return LockOperation.Shape.FLOW;
        }
        // a suspend function returning a Flow is a Flux inside the advice chain (CoroutinesUtils)
        return FLOW.equals(KotlinReturnType.name(method)) ? LockOperation.Shape.FLUX : LockOperation.Shape.MONO;
    }

    /** {@code value} as a {@code Flux} when it is a {@code Flow}, else unchanged. */
    static Object toPublisher(Object value) {
        return (value != null && REACTOR_BRIDGE_PRESENT && Kotlin.isFlow(value)) ? Kotlin.asFlux(value) : value;
    }

    /** The {@code Flux} the lock was wrapped around, as the {@code Flow} the method declares. */
    static Object toFlow(Object publisher) {
        return Kotlin.asFlow(publisher);
    }

    /** Runs a suspend fallback as Spring runs a suspend function in the advice chain: a publisher of its result. */
    static Object invokeSuspending(Method method, Object target, Object[] args) {
        return Kotlin.invokeSuspending(method, target, args);
    }

    /** A watch on the coroutine of one call's body, or {@code null} when the method is not a suspend function. */
    static Watch watch(LockOperation operation) {
        return isSuspending(operation.method()) ? new Watch() : null;
    }

    /**
     * Follows the coroutine that runs one call's body: the call's arguments carry it into that coroutine's context,
     * where it learns the coroutine's {@code Job} the first time the coroutine runs.
     */
    static final class Watch {

        /** The body's coroutine was cancelled before it ran: it never runs the method's code. */
        private static final Object NEVER_RAN = new Object();

        /** {@code null} until the coroutine runs; then its Job; or {@link #NEVER_RAN}. */
        private final AtomicReference<Object> job = new AtomicReference<>();
        private final CompletableFuture<Void> stopped = new CompletableFuture<>();

        /** The call's arguments, its continuation replaced by one whose context carries this watch. */
        Object[] arguments(Object[] args) {
            Object[] copy = args.clone();
            copy[copy.length - 1] = Kotlin.watched(copy[copy.length - 1], this);
            return copy;
        }

        void started(Object coroutineJob) {
            if (job.get() == null && coroutineJob != null && job.compareAndSet(null, coroutineJob)) {
                Kotlin.onCompletion(coroutineJob, () -> stopped.complete(null));
            }
        }

        /**
         * Completes when the cancelled body has stopped: its coroutine and its children have completed. Asked after
         * the cancellation reached the coroutine, so a coroutine not yet run never will run the method's code.
         */
        CompletableFuture<Void> stopped() {
            if (job.compareAndSet(null, NEVER_RAN)) {
                stopped.complete(null);
            }
            return stopped;
        }
    }

    /** Reads the declared (Kotlin) return type of a suspend function from its continuation parameter. */
    private static final class KotlinReturnType {

        static String name(Method method) {
            java.lang.reflect.Type[] types = method.getGenericParameterTypes();
            if (types[types.length - 1] instanceof java.lang.reflect.ParameterizedType continuation) {
                java.lang.reflect.Type result = continuation.getActualTypeArguments()[0];
                if (result instanceof java.lang.reflect.WildcardType wildcard) {
                    result = wildcard.getLowerBounds().length > 0 ? wildcard.getLowerBounds()[0] : Object.class;
                }
                if (result instanceof java.lang.reflect.ParameterizedType parameterized) {
                    result = parameterized.getRawType();
                }
                return (result instanceof Class<?> type) ? type.getName() : "";
            }
            return "";
        }
    }

    /** Everything that names a Kotlin type. */
    private static final class Kotlin {

        static boolean isFlow(Object value) {
            return value instanceof kotlinx.coroutines.flow.Flow<?>;
        }

        static Object asFlux(Object flow) {
            return kotlinx.coroutines.reactor.ReactorFlowKt.asFlux((kotlinx.coroutines.flow.Flow<?>) flow,
                    kotlin.coroutines.EmptyCoroutineContext.INSTANCE);
        }

        static Object asFlow(Object publisher) {
            return kotlinx.coroutines.reactive.ReactiveFlowKt.asFlow((org.reactivestreams.Publisher<?>) publisher);
        }

        static Object invokeSuspending(Method method, Object target, Object[] args) {
            kotlin.coroutines.Continuation<?> continuation = (kotlin.coroutines.Continuation<?>) args[args.length - 1];
            // as Spring's AOP does: the caller's context (dispatcher, elements), not its Job
            return org.springframework.core.CoroutinesUtils.invokeSuspendingFunction(
                    continuation.getContext().minusKey(kotlinx.coroutines.Job.Key), method, target, args);
        }

        @SuppressWarnings("unchecked")
        static Object watched(Object continuation, Watch watch) {
            return new WatchedContinuation((kotlin.coroutines.Continuation<Object>) continuation, new WatchElement(watch));
        }

        static void onCompletion(Object job, Runnable action) {
            ((kotlinx.coroutines.Job) job).invokeOnCompletion(cause -> {
                action.run();
                return kotlin.Unit.INSTANCE;
            });
        }
    }

    /**
     * The caller's continuation with the watch in its context: Spring's AOP starts the body's coroutine in this
     * context (less the Job), so the watch is there when it runs.
     */
    private record WatchedContinuation(kotlin.coroutines.Continuation<Object> caller, WatchElement element)
            implements kotlin.coroutines.Continuation<Object> {

        @Override
        public kotlin.coroutines.CoroutineContext getContext() {
            return caller.getContext().plus(element);
        }

        @Override
        public void resumeWith(Object result) {
            caller.resumeWith(result);
        }
    }

    /**
     * Told with the coroutine's whole context each time a coroutine carrying it runs on a thread: the first time is the
     * body's coroutine, whose Job is the one to follow (children it launches inherit the element and are ignored).
     */
    private static final class WatchElement extends kotlin.coroutines.AbstractCoroutineContextElement
            implements kotlinx.coroutines.ThreadContextElement<Object> {

        private static final kotlin.coroutines.CoroutineContext.Key<WatchElement> KEY =
                new kotlin.coroutines.CoroutineContext.Key<>() {
                };

        private final Watch watch;

        WatchElement(Watch watch) {
            super(KEY);
            this.watch = watch;
        }

        @Override
        public Object updateThreadContext(kotlin.coroutines.CoroutineContext context) {
            watch.started(context.get(kotlinx.coroutines.Job.Key));
            return null;
        }

        @Override
        public void restoreThreadContext(kotlin.coroutines.CoroutineContext context, Object oldState) {
        }
    }
}
