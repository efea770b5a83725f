package io.github.distlock.chaos;

import java.nio.file.Path;

import io.github.distlock.chaos.Checker.Verdict;

/**
 * Checks a kept run again from its files alone (after a change to the checker, or to read its findings):
 * {@code java -cp <chaos test class path> io.github.distlock.chaos.Recheck chaos/target/chaos/<run>}.
 */
public final class Recheck {

    private Recheck() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        History history = History.read(dir, "chaos:");
        long leaseUs = ChaosRun.LEASE.toNanos() / 1000;
        for (boolean fenced : new boolean[] {true, false}) {
            Verdict verdict = Checker.check(history, ChaosRun.readSets(dir), fenced, leaseUs);
            System.out.println((fenced ? "fenced: " : "unfenced: ") + verdict);
        }
    }
}
