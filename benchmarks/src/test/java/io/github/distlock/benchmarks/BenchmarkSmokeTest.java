package io.github.distlock.benchmarks;

import io.github.distlock.benchmarks.LockCycles.Impl;
import io.github.distlock.benchmarks.LockCycles.Lease;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs every benchmarked cycle once, so that a library change which breaks the benchmarks shows up in the build rather
 * than at the start of a half-hour run. Measures nothing.
 */
class BenchmarkSmokeTest {

    @Test
    void everyCycleAcquiresAndReleases() throws Exception {
        try (BenchEnvironment env = BenchEnvironment.start(RedissonVariant.PROPOSED)) {
            for (Impl impl : Impl.values()) {
                for (Lease lease : Lease.values()) {
                    for (boolean wait : new boolean[] {false, true}) {
                        LockCycles.Cycle cycle = LockCycles.cycle(env, impl, lease, wait);
                        assertThat(cycle.run("smoke")).as("%s %s wait=%s", impl, lease, wait).isTrue();
                        // released: a second one-try acquisition of the same key succeeds as well
                        assertThat(cycle.run("smoke")).as("%s %s wait=%s again", impl, lease, wait).isTrue();
                    }
                }
            }
            assertThat(env.redisson().getKeys().countExists("lock:bench:smoke")).isZero();
        }
    }

    @Test
    void overheadBenchmarkStartsWithoutRedis() throws Exception {
        OverheadBenchmark benchmark = new OverheadBenchmark();
        benchmark.start();
        try {
            assertThat(benchmark.annotation()).isEqualTo(1);
            assertThat(benchmark.template()).isEqualTo(1);
            assertThat(benchmark.provider()).isTrue();
        }
        finally {
            benchmark.stop();
        }
    }
}
