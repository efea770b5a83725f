package io.github.distlock.benchmarks;

import java.util.ArrayList;
import java.util.List;

import io.github.distlock.LockType;
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
            int cycles = 0;
            for (Impl impl : Impl.values()) {
                for (LockType type : impl.takesTypes() ? LockType.values() : new LockType[] {LockType.REENTRANT}) {
                    for (Lease lease : Lease.values()) {
                        for (boolean wait : new boolean[] {false, true}) {
                            // each type on a key of its own: types of one key share (and exclude on) its structure
                            String id = "smoke-" + type;
                            LockCycles.Cycle cycle = LockCycles.cycle(env, impl, lease, wait, type);
                            assertThat(cycle.run(id)).as("%s %s %s wait=%s", impl, type, lease, wait).isTrue();
                            // released: a second one-try acquisition of the same key succeeds as well
                            assertThat(cycle.run(id)).as("%s %s %s wait=%s again", impl, type, lease, wait).isTrue();
                            cycles++;
                        }
                    }
                }
            }
            assertThat(cycles).isEqualTo(4 * (5 * 4 + 2));
            // nothing left behind: no lock hash, no fair-lock queue, no read-lock timeout key
            List<String> left = new ArrayList<>();
            env.redisson().getKeys().getKeysByPattern("*smoke*").forEach(left::add);
            assertThat(left).isEmpty();
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
