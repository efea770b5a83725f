package io.github.distlock.chaos;

import java.nio.file.Path;

import io.github.distlock.chaos.Checker.Verdict;

/**
 * Checks a kept run again from its files alone (its CHAOS lines; {@code seconds} is the fault phase here, from the
 * first fault to the last heal) (after a change to the checker, or to read its findings):
 * {@code java -cp <chaos test class path> io.github.distlock.chaos.Recheck chaos/target/chaos/<run>}.
 */
public final class Recheck {

    private Recheck() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        History history = History.read(dir, "chaos:");
        long leaseUs = ChaosRun.LEASE.toNanos() / 1000;
        java.util.List<String> schedule = java.nio.file.Files.readAllLines(dir.resolve("faults.log"));
        java.util.Map<String, Integer> faults = new java.util.TreeMap<>();
        schedule.stream().filter(line -> line.startsWith("FAULT ")).forEach(line -> faults.merge(line.split(" ")[1], 1,
                Integer::sum));
        String header = schedule.get(0);
        String topology = header.replaceAll(".*topology=(\\S+).*", "$1");
        long seed = Long.parseLong(header.replaceAll(".*seed=(\\S+).*", "$1"));
        long first = Long.parseLong(schedule.stream().filter(line -> line.startsWith("FAULT ")).findFirst()
                .orElseThrow().split(" ")[3]);
        long healed = history.healed();
        ChaosRun.Outcome outcome = new ChaosRun.Outcome(topology, java.time.Duration.ofNanos((healed - first) * 1000),
                seed, faults, Checker.check(history, ChaosRun.readSets(dir), true, leaseUs),
                Checker.check(history, ChaosRun.readSets(dir), false, leaseUs), java.util.List.of(), dir);
        for (Verdict verdict : java.util.List.of(outcome.fenced(), outcome.unfenced())) {
            System.out.println(outcome.line(verdict));
            verdict.examples().stream().filter(text -> !text.startsWith("lost update")).forEach(System.out::println);
        }
    }
}
