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

    /** Only {@code nettyThreads} = available processors (minimum 2); everything else as {@link #DEFAULT}. */
    NETTY_CPUS {
        @Override
        void apply(Config config) {
            config.setNettyThreads(cpus());
        }
    },

    /** Only {@code nettyThreads} = 2 x available processors, Netty's own default; everything else as {@link #DEFAULT}. */
    NETTY_2CPUS {
        @Override
        void apply(Config config) {
            config.setNettyThreads(2 * cpus());
        }
    },

    /** Only {@code threads} = available processors (minimum 2); everything else as {@link #DEFAULT}. */
    THREADS_CPUS {
        @Override
        void apply(Config config) {
            config.setThreads(cpus());
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
    };

    abstract void apply(Config config);

    static int cpus() {
        return Math.max(2, Runtime.getRuntime().availableProcessors());
    }
}
