package io.github.distlock.benchmarks;

import org.redisson.config.Config;

/**
 * Redisson {@link Config} variants measured against the one distlock's auto-configuration builds. None of them touches
 * what a lock means (scripts, lease, watchdog, ownership): only threads and connection pools.
 */
public enum RedissonVariant {

    /** Exactly what distlock's auto-configuration builds (Redisson's own defaults for threads and pools). */
    DEFAULT {
        @Override
        void apply(Config config) {
        }
    },

    /** Only {@code nettyThreads} = 2 x available processors (Netty's own default), at most Redisson's 32. */
    NETTY_2CPUS {
        @Override
        void apply(Config config) {
            config.setNettyThreads(Math.min(32, 2 * cpus()));
        }
    },

    /**
     * The proposed auto-configuration default: {@code nettyThreads} = 2 x CPUs and {@code threads} = CPUs (minimum 2),
     * each capped at Redisson's own default (32 and 16), so machines with 16+ cores see no change; pools untouched.
     */
    PROPOSED {
        @Override
        void apply(Config config) {
            config.setNettyThreads(Math.min(32, 2 * cpus()));
            config.setThreads(Math.min(16, cpus()));
        }
    },

    /**
     * Thread pools sized to the machine instead of Redisson's fixed 16 + 32: {@code threads} and {@code nettyThreads} =
     * available processors (minimum 2), and a smaller idle pool (Redisson opens 24 connections at start-up by default).
     */
    LEAN {
        @Override
        void apply(Config config) {
            int cpus = cpus();
            config.setThreads(cpus);
            config.setNettyThreads(cpus);
            config.useSingleServer().setConnectionMinimumIdleSize(Math.min(8, cpus * 2));
        }
    },

    /**
     * A diagnostic, not a candidate default: Redisson's {@code executor} (which runs pub/sub listeners, RTopic's and
     * the locks' own) replaced by one that runs each task at once on the thread that hands it over — Netty's event loop
     * for a pub/sub message. Measures what the hop from the event loop to a listener thread costs a hand-off; a listener
     * that blocked would stall the event loop, so no application should run like this.
     */
    INLINE_LISTENERS {
        @Override
        void apply(Config config) {
            config.setExecutor(new InlineExecutor());
        }
    };

    /** Runs every task on the calling thread. */
    private static final class InlineExecutor extends java.util.concurrent.AbstractExecutorService {

        private volatile boolean shutdown;

        @Override
        public void execute(Runnable command) {
            command.run();
        }

        @Override
        public void shutdown() {
            shutdown = true;
        }

        @Override
        public java.util.List<Runnable> shutdownNow() {
            shutdown = true;
            return java.util.List.of();
        }

        @Override
        public boolean isShutdown() {
            return shutdown;
        }

        @Override
        public boolean isTerminated() {
            return shutdown;
        }

        @Override
        public boolean awaitTermination(long timeout, java.util.concurrent.TimeUnit unit) {
            return shutdown;
        }
    }

    abstract void apply(Config config);

    static int cpus() {
        return Math.max(2, Runtime.getRuntime().availableProcessors());
    }
}
