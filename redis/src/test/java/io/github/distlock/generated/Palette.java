package io.github.distlock.generated;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockContext;
import io.github.distlock.LockType;
import io.github.distlock.generated.Probe.Kind;
import io.github.distlock.generated.Probe.Mode;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The fixed palette of annotated methods the generated calls choose from: their options span wait, lease and minimum
 * hold in several units and in the string forms (with a {@code ${}} placeholder), every lock type, fencing, permits,
 * skip and fallback, several keys at once, and every result shape. Every body reports to the {@link Probe}.
 */
public class Palette {

    private static final Executor ASYNC = Executors.newCachedThreadPool(runnable -> {
        Thread thread = new Thread(runnable, "palette-async");
        thread.setDaemon(true);
        return thread;
    });

    private final Probe probe = Probe.INSTANCE;

    private String body(String method, String key, Kind kind, Mode mode, boolean fenced, boolean threadBound) {
        if (fenced) {
            probe.fenced(key);
        }
        OptionalLong token = fenced ? LockContext.fencingToken("lock:" + key) : OptionalLong.empty();
        Probe.Ticket ticket = probe.enter(key, kind, token, true, threadBound);
        try {
            // a moment inside, so that a contending call overlaps it if the lock lets it
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
            probe.holdIfAsked(key, mode);
            return method + ":" + key;
        }
        finally {
            ticket.exit();
        }
    }

    @DistributedLock(key = "'re:' + #k", waitTime = 0)
    public String reentrant(String k, Mode mode) {
        return body("reentrant", "re:" + k, Kind.EXCLUSIVE, mode, false, true);
    }

    @DistributedLock(key = "'fair:' + #k", type = LockType.FAIR, waitTime = 0, leaseTime = 5, timeUnit = TimeUnit.SECONDS)
    public String fair(String k, Mode mode) {
        return body("fair", "fair:" + k, Kind.EXCLUSIVE, mode, false, true);
    }

    @DistributedLock(key = "'rw:' + #k", type = LockType.WRITE, fenced = true, waitTimeString = "0",
            leaseTimeString = "PT10S")
    public String writeFenced(String k, Mode mode) {
        return body("writeFenced", "rw:" + k, Kind.EXCLUSIVE, mode, true, true);
    }

    @DistributedLock(key = "'rw:' + #k", type = LockType.READ, waitTimeString = "${palette.wait}")
    public String read(String k, Mode mode) {
        return body("read", "rw:" + k, Kind.SHARED, mode, false, true);
    }

    /** "Keep it until I'm done": the largest lease each form can say. */
    @DistributedLock(key = "'fairever:' + #k", type = LockType.FAIR, waitTime = 0, leaseTime = Long.MAX_VALUE)
    public String fairForever(String k, Mode mode) {
        return body("fairForever", "fairever:" + k, Kind.EXCLUSIVE, mode, false, true);
    }

    @DistributedLock(key = "'reever:' + #k", waitTime = 0, leaseTime = Long.MAX_VALUE, timeUnit = TimeUnit.DAYS,
            fenced = true)
    public String reentrantForever(String k, Mode mode) {
        return body("reentrantForever", "reever:" + k, Kind.EXCLUSIVE, mode, true, true);
    }

    @DistributedLock(key = "'rwever:' + #k", type = LockType.WRITE, waitTime = 0, leaseTime = Long.MAX_VALUE,
            timeUnit = TimeUnit.SECONDS)
    public String writeForever(String k, Mode mode) {
        return body("writeForever", "rwever:" + k, Kind.EXCLUSIVE, mode, false, true);
    }

    @DistributedLock(key = "'semever:' + #k", permits = 2, waitTime = 0, leaseTimeString = "PT2562047788015215H")
    public String permitsForever(String k, Mode mode) {
        return body("permitsForever", "semever:" + k, Kind.PERMITS_2, mode, false, false);
    }

    @DistributedLock(key = "'skip:' + #k", skipIfLocked = true, waitTime = 0, holdAtLeast = 20)
    public String skip(String k, Mode mode) {
        return body("skip", "skip:" + k, Kind.EXCLUSIVE, mode, false, true);
    }

    @DistributedLock(key = "'opt:' + #k", skipIfLocked = true, waitTime = 0, holdAtLeast = 30_000,
            timeUnit = TimeUnit.MICROSECONDS)
    public Optional<String> skipOptional(String k, Mode mode) {
        return Optional.of(body("skipOptional", "opt:" + k, Kind.EXCLUSIVE, mode, false, true));
    }

    @DistributedLock(key = "'fb:' + #k", type = LockType.FAIR, fenced = true, waitTime = 0, fallbackMethod = "fallback")
    public String withFallback(String k, Mode mode) {
        return body("withFallback", "fb:" + k, Kind.EXCLUSIVE, mode, true, true);
    }

    public String fallback(String k, Mode mode, LockAcquisitionException reason) {
        return "fallback:" + k + ":" + reason.getMessage();
    }

    @DistributedLock(key = "'sem:' + #k", permits = 2, waitTime = 0, leaseTime = 3000)
    public String permits(String k, Mode mode) {
        return body("permits", "sem:" + k, Kind.PERMITS_2, mode, false, false);
    }

    @DistributedLock(key = "{'multi:' + #k, 'multi:' + #k + ':b'}", waitTime = 0, fenced = true)
    public String multi(String k, Mode mode) {
        if (!LockContext.heldKeys().contains("lock:multi:" + k + ":b")) {
            throw new IllegalStateException("second key of multi:" + k + " not held: " + LockContext.heldKeys());
        }
        return body("multi", "multi:" + k, Kind.EXCLUSIVE, mode, true, true);
    }

    @DistributedLock(key = "'stage:' + #k", waitTime = 0, fenced = true)
    public CompletableFuture<String> stage(String k, Mode mode) {
        String key = "stage:" + k;
        probe.fenced(key);
        Probe.Ticket ticket = probe.enter(key, Kind.EXCLUSIVE, LockContext.fencingToken("lock:" + key), true, true);
        return CompletableFuture.supplyAsync(() -> {
            try {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
                probe.holdIfAsked(key, mode);
                return "stage:" + key;
            }
            finally {
                ticket.exit();
            }
        }, ASYNC);
    }

    @DistributedLock(key = "'stageskip:' + #k", skipIfLocked = true, waitTimeString = "20ms")
    public CompletionStage<String> stageSkip(String k, Mode mode) {
        return CompletableFuture.completedFuture(body("stageSkip", "stageskip:" + k, Kind.EXCLUSIVE, mode, false, true));
    }

    @DistributedLock(key = "'mono:' + #k", type = LockType.FAIR, waitTime = 0)
    public Mono<String> mono(String k, Mode mode) {
        return Mono.fromCallable(() -> body("mono", "mono:" + k, Kind.EXCLUSIVE, mode, false, false));
    }

    @DistributedLock(key = "'monofb:' + #k", fallbackMethod = "monoFallback", waitTime = 0, leaseTimeString = "2s")
    public Mono<String> monoWithFallback(String k, Mode mode) {
        return Mono.fromCallable(() -> body("monoWithFallback", "monofb:" + k, Kind.EXCLUSIVE, mode, false, false));
    }

    public Mono<String> monoFallback(String k, Mode mode) {
        return Mono.just("fallback:" + k);
    }

    /** Three items, or (in {@link Mode#HOLD}) one item and then nothing until released; cancellable in between. */
    @DistributedLock(key = "'rw:' + #k", type = LockType.WRITE, waitTime = 0, leaseTimeString = "1m")
    public Flux<String> fluxWrite(String k, Mode mode) {
        String key = "rw:" + k;
        return Flux.defer(() -> {
            Probe.Ticket ticket = probe.enter(key, Kind.EXCLUSIVE, OptionalLong.empty(), true, false);
            Flux<String> items = (mode == Mode.FAIL)
                    ? Flux.concat(Flux.just("a"), Flux.error(new Probe.BodyFailure(key)))
                    : Flux.just("a", "b", "c").concatWith(Mono.fromRunnable(() -> probe.holdIfAsked(key, mode))
                            .subscribeOn(Schedulers.boundedElastic()).then(Mono.empty()));
            return items.doFinally(signal -> ticket.exit());
        });
    }

    /** Items every 5 ms for as long as someone listens: a stream that only a cancellation ends. */
    @DistributedLock(key = "'rw:' + #k", type = LockType.WRITE, waitTime = 0)
    public Flux<Long> endless(String k) {
        String key = "rw:" + k;
        return Flux.defer(() -> {
            Probe.Ticket ticket = probe.enter(key, Kind.EXCLUSIVE, OptionalLong.empty(), true, false);
            return Flux.interval(Duration.ofMillis(5)).doFinally(signal -> ticket.exit());
        });
    }

    @DistributedLock(key = "'fluxskip:' + #k", skipIfLocked = true, waitTime = 0, holdAtLeast = 10_000,
            timeUnit = TimeUnit.MICROSECONDS)
    public Flux<String> fluxSkip(String k, Mode mode) {
        return Flux.defer(() -> Flux.fromIterable(List.of(body("fluxSkip", "fluxskip:" + k, Kind.EXCLUSIVE, mode, false,
                false))));
    }
}
