package io.github.distlock.benchmarks;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * One full acquire + release cycle with an empty critical section, per implementation, lease kind and key layout. Run
 * it with {@code -t 1}, {@code -t 8}, {@code -t 64}; {@code Suite} does all three and prints the ratios.
 *
 * <p>Sample-time mode gives the latency percentiles; throughput is threads / mean cycle time (every thread runs cycles
 * back to back, so Little's law holds exactly).
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 3)
@Measurement(iterations = 4, time = 4)
public class LockCycleBenchmark {

    /** The trial's Redis, application and the cycle under test. */
    @State(Scope.Benchmark)
    public static class Env {

        /**
         * {@code redisson}, {@code template}, {@code annotation} or {@code raw}; also {@code multi} (the template on
         * two keys), {@code template_nested} and {@code redisson_nested} (a nested call on the held key), which are not
         * in the default set.
         */
        @Param({"redisson", "template", "annotation", "raw"})
        public String impl;

        /** {@code watchdog} or {@code fixed} (the raw client always uses a fixed lease). */
        @Param({"watchdog", "fixed"})
        public String lease;

        /** {@code distinct}: one key per thread, never contended; {@code contended}: one key for all threads. */
        @Param({"distinct", "contended"})
        public String keys;

        /**
         * The lock type ({@code reentrant}, {@code fair}, {@code read}, {@code write}); types other than reentrant only
         * for the cycles that take them ({@link LockCycles.Impl#takesTypes()}).
         */
        @Param({"reentrant"})
        public String type;

        /** The Redisson config variant ({@link RedissonVariant}). */
        @Param({"default"})
        public String redisson;

        BenchEnvironment env;
        LockCycles.Cycle cycle;
        boolean contended;

        @Setup(Level.Trial)
        public void start() {
            contended = keys.equals("contended");
            env = BenchEnvironment.start(RedissonVariant.valueOf(redisson.toUpperCase(java.util.Locale.ROOT)));
            try {
                cycle = LockCycles.cycle(env, LockCycles.Impl.of(impl), LockCycles.Lease.of(lease), contended,
                        LockCycles.type(type));
            }
            catch (RuntimeException ex) {
                env.close();
                throw ex;
            }
        }

        @TearDown(Level.Trial)
        public void stop() {
            env.close();
        }
    }

    /** The key of one benchmark thread. */
    @State(Scope.Thread)
    public static class Key {

        String id;

        @Setup(Level.Trial)
        public void choose(Env env, ThreadParams thread) {
            id = env.contended ? "hot" : "t" + thread.getThreadIndex();
        }
    }

    /** Acquires and releases; a missed acquisition is a broken benchmark, not a result. */
    @Benchmark
    public boolean cycle(Env env, Key key) throws InterruptedException {
        if (!env.cycle.run(key.id)) {
            throw new IllegalStateException("lock '" + key.id + "' was not acquired");
        }
        return true;
    }
}
