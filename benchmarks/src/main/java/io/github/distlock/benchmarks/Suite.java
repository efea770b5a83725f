package io.github.distlock.benchmarks;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs every benchmark in one go and writes one Markdown report with the ratios: {@code Suite quick} for a look in a
 * few minutes, {@code Suite full} for the numbers to publish (about 45 minutes on two cores). Optional further
 * arguments pick parts: {@code cycle overhead paired handoff profile variants types nested cluster backends hotkey
 * permits peers held}.
 *
 * <p>JMH's own log and JSON results go next to the report in {@code target/results/<mode>-<time>/}.
 */
public final class Suite {

    private final boolean full;
    private final Path dir;
    private final PrintStream report;

    private Suite(boolean full, Path dir, PrintStream report) {
        this.full = full;
        this.dir = dir;
        this.report = report;
    }

    /** Usage: {@code Suite quick|full [part...]}. */
    public static void main(String[] args) throws Exception {
        boolean full = args.length > 0 && args[0].equals("full");
        Set<String> parts = new LinkedHashSet<>(List.of("cycle", "overhead", "paired", "handoff", "profile", "variants",
                "types", "nested", "cluster", "backends", "hotkey", "permits", "peers", "held"));
        if (args.length > 1) {
            parts = new LinkedHashSet<>(List.of(args).subList(1, args.length));
        }
        else if (!full) {
            parts.remove("variants");
            parts.remove("types");
            parts.remove("nested");
            parts.remove("cluster");
            parts.remove("backends");
            parts.remove("hotkey");
            parts.remove("permits");
            parts.remove("peers");
            parts.remove("held");
        }
        String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
        Path dir = Path.of("target", "results", (full ? "full-" : "quick-") + stamp);
        Files.createDirectories(dir);
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        try (PrintStream report = new PrintStream(new TeeStream(buffer, System.out), true, StandardCharsets.UTF_8)) {
            Suite suite = new Suite(full, dir, report);
            suite.header(parts);
            for (String part : parts) {
                switch (part) {
                    case "cycle" -> suite.cycles();
                    case "overhead" -> suite.overhead();
                    case "paired" -> suite.paired();
                    case "handoff" -> suite.handoff();
                    case "profile" -> suite.profile();
                    case "variants" -> suite.variants();
                    case "types" -> suite.types();
                    case "nested" -> suite.nested();
                    case "cluster" -> suite.cluster();
                    case "backends" -> suite.backends();
                    case "hotkey" -> suite.hotKey();
                    case "permits" -> suite.permits();
                    case "peers" -> suite.peers();
                    case "held" -> suite.held();
                    default -> throw new IllegalArgumentException("unknown part " + part);
                }
                Files.write(dir.resolve("report.md"), buffer.toByteArray());
            }
        }
        Files.write(dir.resolve("report.md"), buffer.toByteArray());
        System.out.println();
        System.out.println("Report: " + dir.resolve("report.md").toAbsolutePath());
    }

    private void header(Set<String> parts) throws IOException {
        report.printf(Locale.ROOT, "# distlock benchmarks (%s run, %s)%n%n", full ? "full" : "quick", LocalDateTime.now()
                .format(DateTimeFormatter.ISO_LOCAL_DATE_TIME));
        report.printf(Locale.ROOT, "- JVM: %s %s; %d CPUs visible; max heap %d MB%n", System.getProperty("java.vm.name"),
                System.getProperty("java.version"), Runtime.getRuntime().availableProcessors(),
                Runtime.getRuntime().maxMemory() >> 20);
        report.printf(Locale.ROOT, "- load average at start: %s%n", Counters.loadAverage());
        report.printf(Locale.ROOT, "- parts: %s%n", String.join(", ", parts));
    }

    // ---------------------------------------------------------------- JMH lock cycles

    private void cycles() throws RunnerException {
        section("Lock cycle (acquire + release, empty critical section)",
                "JMH sample-time mode; cycles/s = threads / mean cycle time. \"vs Redisson\" = mean cycle time over raw "
                        + "Redisson's with the same lease, keys and threads (1.00 = no overhead); the raw client is "
                        + "compared with Redisson's fixed lease. B/op: all JVM threads' allocation per cycle (-prof gc).");
        int[] threads = full ? new int[] {1, 8, 64} : new int[] {1, 8};
        String[] keyLayouts = full ? new String[] {"distinct", "contended"} : new String[] {"distinct"};
        List<RunResult> all = new ArrayList<>();
        for (String keys : keyLayouts) {
            for (int t : threads) {
                if (keys.equals("contended") && t == 1) {
                    continue; // one thread cannot contend with itself
                }
                // raw has no watchdog: run it with the fixed lease only
                all.addAll(jmh("cycle-" + keys + "-t" + t, jmhCycle(t)
                        .param("impl", "redisson", "template", "annotation").param("lease", "watchdog", "fixed")
                        .param("keys", keys)));
                all.addAll(jmh("cycle-raw-" + keys + "-t" + t, jmhCycle(t)
                        .param("impl", "raw").param("lease", "fixed").param("keys", keys)));
            }
        }
        cycleTable(all);
    }

    private ChainedOptionsBuilder jmhCycle(int threads) {
        return base(LockCycleBenchmark.class.getName()).threads(threads)
                .warmupIterations(full ? 2 : 1).warmupTime(TimeValue.seconds(full ? 3 : 1))
                .measurementIterations(full ? 4 : 2).measurementTime(TimeValue.seconds(full ? 4 : 2))
                .addProfiler("gc");
    }

    private void cycleTable(List<RunResult> results) {
        Map<String, Double> redissonMean = new TreeMap<>();
        for (RunResult r : results) {
            if (param(r, "impl").equals("redisson")) {
                redissonMean.put(groupKey(r, param(r, "lease")), r.getPrimaryResult().getScore());
            }
        }
        report.println("| keys | threads | case | cycles/s | mean µs | p50 µs | p99 µs | B/op | vs Redisson |");
        report.println("|---|---:|---|---:|---:|---:|---:|---:|---:|");
        for (RunResult r : results) {
            Result primary = r.getPrimaryResult();
            int threads = r.getParams().getThreads();
            double mean = primary.getScore();
            Double base = redissonMean.get(groupKey(r, param(r, "impl").equals("raw") ? "fixed" : param(r, "lease")));
            report.printf(Locale.ROOT, "| %s | %d | %s | %.0f | %.0f | %.0f | %.0f | %s | %s |%n", param(r, "keys"),
                    threads, label(param(r, "impl"), param(r, "lease")), threads * 1e6 / mean, mean,
                    primary.getStatistics().getPercentile(50), primary.getStatistics().getPercentile(99),
                    gcNorm(r), (base == null) ? "" : String.format(Locale.ROOT, "%.3f", mean / base));
        }
    }

    private static String groupKey(RunResult r, String lease) {
        return param(r, "keys") + "/" + r.getParams().getThreads() + "/" + lease + "/" + param(r, "redisson");
    }

    private static String label(String impl, String lease) {
        return switch (impl) {
            case "redisson" -> "Redisson RLock, " + lease;
            case "template" -> "LockTemplate, " + lease;
            case "annotation" -> "@DistributedLock, " + lease;
            default -> "raw SET NX PX + Lua (floor)";
        };
    }

    // ---------------------------------------------------------------- JMH in-JVM overhead and key evaluation

    private void overhead() throws RunnerException {
        section("distlock's own cost per call, without Redis; key evaluation",
                "JMH average time. OverheadBenchmark runs the real proxy, interceptor, SpEL key and template on a lock "
                        + "provider that grants at once; KeyEvaluationBenchmark evaluates cached, parsed key expressions.");
        List<RunResult> results = jmh("overhead", base(OverheadBenchmark.class.getName() + "|"
                + "io.github.distlock.aop.KeyEvaluationBenchmark")
                .warmupIterations(full ? 3 : 1).warmupTime(TimeValue.seconds(full ? 2 : 1))
                .measurementIterations(full ? 5 : 2).measurementTime(TimeValue.seconds(full ? 2 : 1))
                .addProfiler("gc"));
        report.println("| benchmark | ns/op | ± (99.9 %) | B/op |");
        report.println("|---|---:|---:|---:|");
        for (RunResult r : results) {
            Result primary = r.getPrimaryResult();
            String name = r.getParams().getBenchmark();
            name = name.substring(name.lastIndexOf('.', name.lastIndexOf('.') - 1) + 1);
            double error = primary.getScoreError();
            report.printf(Locale.ROOT, "| %s | %.1f | %s | %s |%n", name, primary.getScore(),
                    Double.isNaN(error) ? "" : String.format(Locale.ROOT, "%.1f", error), gcNorm(r));
        }
    }

    // ---------------------------------------------------------------- harnesses

    private void paired() throws Exception {
        section("Overhead ratio, paired (noise-cancelling)",
                "Each thread alternates a raw-Redisson cycle and a distlock cycle on one Redis and one client; ratio = "
                        + "mean distlock cycle / mean Redisson cycle. Target: <= 1.03 at 1 and 8 threads.");
        PairedComparison.print(PairedComparison.run(PairedComparison.pairs(new int[] {1, 8}),
                full ? 6 : 2, full ? 5 : 2), report);
    }

    private void handoff() throws Exception {
        section("Hand-off latency on one hot key",
                "Time from the holder starting its release to the next thread holding the lock (wait 30 s, watchdog). "
                        + "Self re-grabs (the releasing thread takes the lock again) are counted apart. Target p50 <= 1 ms.");
        int seconds = full ? 10 : 3;
        int[] threads = full ? new int[] {2, 8, 64} : new int[] {8};
        List<HandoffLatency.Result> results = new ArrayList<>();
        for (int t : threads) {
            for (HandoffLatency.Impl impl : HandoffLatency.Impl.values()) {
                progress("hand-off " + impl + " " + t + " threads");
                results.add(HandoffLatency.run(impl, t, Math.max(1, seconds / 3), seconds));
            }
        }
        HandoffLatency.print(results, report);
    }

    private void profile() throws Exception {
        section("Where the time goes: Redis commands, CPU and allocation per cycle",
                "Counter deltas over a fixed number of cycles after warm-up (INFO commandstats / cpu / stats on the "
                        + "Redis side; process CPU time and all threads' allocated bytes on the client side).");
        progress("profile");
        RedisProfile.print(RedisProfile.run(RedisProfile.defaultCases(), full ? 20_000 : 4_000), report);
    }

    private void variants() throws RunnerException {
        section("Redisson Config variants (candidate defaults)",
                "Same cycle benchmark, raw Redisson, watchdog, distinct keys. default = what distlock builds today "
                        + "(Redisson's threads 16, nettyThreads 32); proposed = nettyThreads min(32, 2 x CPUs), threads "
                        + "min(16, CPUs); lean = threads and nettyThreads = CPUs, connectionMinimumIdleSize min(8, 2 x CPUs).");
        List<RunResult> all = new ArrayList<>();
        for (int t : new int[] {1, 8, 64}) {
            all.addAll(jmh("variants-t" + t, jmhCycle(t).param("impl", "redisson")
                    .param("lease", "watchdog").param("keys", "distinct").param("redisson", "default", "proposed", "lean")));
        }
        report.println("| threads | case | Redisson config | cycles/s | p50 µs | p99 µs | B/op |");
        report.println("|---:|---|---|---:|---:|---:|---:|");
        for (RunResult r : all) {
            Result primary = r.getPrimaryResult();
            int threads = r.getParams().getThreads();
            report.printf(Locale.ROOT, "| %d | %s | %s | %.0f | %.0f | %.0f | %s |%n", threads,
                    label(param(r, "impl"), param(r, "lease")), param(r, "redisson"),
                    threads * 1e6 / primary.getScore(), primary.getStatistics().getPercentile(50),
                    primary.getStatistics().getPercentile(99), gcNorm(r));
        }
    }

    // ---------------------------------------------------------------- lock types, multi-key, nested calls

    private void types() throws Exception {
        section("Lock types and two-key calls (LockTemplate, watchdog)",
                "JMH sample-time mode, one trial per row, all in this run; a fresh Redis per trial. \"vs REENTRANT\" = "
                        + "mean cycle time over the REENTRANT row with the same keys and threads (separate trials: machine "
                        + "noise included; the interleaved table below cancels it). distinct = one key per thread; "
                        + "contended = one hot key for all threads, wait up to 30 s. 2 keys = execute(List.of(id:a, id:b)), "
                        + "REENTRANT, taken one after the other.");
        int[] threads = full ? new int[] {1, 8, 64} : new int[] {1, 8};
        List<RunResult> all = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        for (String keys : new String[] {"distinct", "contended"}) {
            for (int t : threads) {
                if (keys.equals("contended") && t == 1) {
                    continue; // one thread cannot contend with itself: the distinct row is the same cycle
                }
                // a trial that fails (on a hot key under heavy load a waiter can wait past 30 s) is reported as a row
                // of its own instead of ending the run
                List<RunResult> typed = jmh("types-" + keys + "-t" + t, jmhTypes(t).param("impl", "template")
                        .param("lease", "watchdog").param("keys", keys).param("type", "reentrant", "fair", "read", "write"));
                all.addAll(typed);
                for (String type : new String[] {"reentrant", "fair", "read", "write"}) {
                    if (typed.stream().noneMatch(r -> param(r, "type").equals(type))) {
                        failed.add(String.format(Locale.ROOT, "| %s | %d | %s | failed: see types-%s-t%d.log | | | | | |",
                                keys, t, type.toUpperCase(Locale.ROOT), keys, t));
                    }
                }
                List<RunResult> multi = jmh("types-multi-" + keys + "-t" + t, jmhTypes(t).param("impl", "multi")
                        .param("lease", "watchdog").param("keys", keys).param("type", "reentrant"));
                all.addAll(multi);
                if (multi.isEmpty()) {
                    failed.add(String.format(Locale.ROOT, "| %s | %d | 2 keys per call (REENTRANT) | failed: see "
                            + "types-multi-%s-t%d.log | | | | | |", keys, t, keys, t));
                }
            }
        }
        Map<String, Double> reentrantMean = new TreeMap<>();
        for (RunResult r : all) {
            if (param(r, "impl").equals("template") && param(r, "type").equals("reentrant")) {
                reentrantMean.put(groupKey(r, "watchdog"), r.getPrimaryResult().getScore());
            }
        }
        report.println("| keys | threads | case | cycles/s | mean µs | p50 µs | p99 µs | B/op | vs REENTRANT |");
        report.println("|---|---:|---|---:|---:|---:|---:|---:|---:|");
        for (RunResult r : all) {
            Result primary = r.getPrimaryResult();
            int t = r.getParams().getThreads();
            double mean = primary.getScore();
            Double base = reentrantMean.get(groupKey(r, "watchdog"));
            String label = param(r, "impl").equals("multi") ? "2 keys per call (REENTRANT)"
                    : param(r, "type").toUpperCase(Locale.ROOT);
            report.printf(Locale.ROOT, "| %s | %d | %s | %.0f | %.0f | %.0f | %.0f | %s | %s |%n", param(r, "keys"), t,
                    label, t * 1e6 / mean, mean, primary.getStatistics().getPercentile(50),
                    primary.getStatistics().getPercentile(99), gcNorm(r),
                    (base == null) ? "" : String.format(Locale.ROOT, "%.3f", mean / base));
        }
        failed.forEach(report::println);
        report.printf(Locale.ROOT, "%nLoad average after the JMH trials: %s%n", Counters.loadAverage());

        report.println();
        report.println("Interleaved (noise-cancelling): every thread runs the five cycles in turn on keys of its own, "
                + "one key per thread, one try, watchdog; ratio = mean cycle over REENTRANT's, per-round spread as error bar.");
        List<List<InterleavedComparison.Result>> interleaved = new ArrayList<>();
        for (int t : new int[] {1, 8}) {
            progress("interleaved types " + t + " threads");
            interleaved.add(InterleavedComparison.run(InterleavedComparison.typeCases(), t, full ? 5 : 2, full ? 3 : 2));
        }
        InterleavedComparison.print(interleaved, report);
        report.printf(Locale.ROOT, "%nLoad average after the interleaved run: %s%n", Counters.loadAverage());

        report.println();
        report.println("Redis commands and CPU per cycle (RedisProfile):");
        progress("profile types");
        RedisProfile.print(RedisProfile.run(RedisProfile.typeCases(), full ? 8_000 : 2_000), report);
    }

    /** Shorter than {@link #jmhCycle}: the types table has 25 trials, and its ratios come from one run. */
    private ChainedOptionsBuilder jmhTypes(int threads) {
        return base(LockCycleBenchmark.class.getName()).shouldFailOnError(false).threads(threads)
                .warmupIterations(1).warmupTime(TimeValue.seconds(full ? 2 : 1))
                .measurementIterations(full ? 3 : 2).measurementTime(TimeValue.seconds(full ? 2 : 1))
                .addProfiler("gc");
    }

    private void nested() throws Exception {
        section("Nested call on a held key",
                "Interleaved: every thread runs the four cycles in turn on keys of its own (one try, watchdog). A nested "
                        + "distlock call re-enters in the template after one HEXISTS (is the outer lock still held?); "
                        + "Redisson's own re-entry runs its lock script again and its unlock script once more.");
        List<List<InterleavedComparison.Result>> results = new ArrayList<>();
        for (int t : new int[] {1, 8}) {
            progress("nested " + t + " threads");
            results.add(InterleavedComparison.run(InterleavedComparison.nestedCases(), t, full ? 5 : 2, full ? 3 : 2));
        }
        InterleavedComparison.printNested(results, report);
        report.printf(Locale.ROOT, "%nLoad average at the end: %s%n", Counters.loadAverage());
    }

    private void cluster() throws Exception {
        section("Redis Cluster next to a single server",
                "One JVM, one run: a single redis-server, a 3-master cluster and a 3+3 cluster, one application each (the "
                        + "3+3 cluster twice: checkLockSyncedSlaves on and off). @DistributedLock, one try, watchdog, "
                        + "one key per thread. The deployments take turns in equal time slots, in an order rotating per "
                        + "round; \"vs single\" is computed per round from neighbouring slots.");
        report.printf(Locale.ROOT, "Load average at start: %s%n", Counters.loadAverage());
        progress("cluster comparison");
        int[] threads = full ? new int[] {1, 8, 64} : new int[] {1, 8};
        ClusterComparison.print(ClusterComparison.run(threads, full ? 4 : 2, full ? 3_000 : 2_000), report);
        report.printf(Locale.ROOT, "%nLoad average at the end: %s%n", Counters.loadAverage());
    }

    private void backends() throws Exception {
        // -Dbench.backends=all (or redis,postgres,postgres_async,zookeeper,etcd) adds PostgreSQL with
        // synchronous_commit off, which the default set leaves out to keep the run short
        String chosen = System.getProperty("bench.backends");
        var backends = (chosen == null) ? BackendComparison.DEFAULT_BACKENDS : BackendComparison.parseBackends(chosen);
        section("Backends side by side: Redis, PostgreSQL, ZooKeeper, etcd",
                "One JVM, one run: a redis-server, an embedded PostgreSQL (pg_stat_statements loaded), a ZooKeeper "
                        + "TestingServer (in the JVM) and an etcd process, one application per backend ("
                        + backends + "). @DistributedLock, wait up to 30 s, watchdog, a tiny body (an exclusion check; "
                        + "on the hot key the hand-off time from the previous holder's body end to the next holder's "
                        + "body start). The backends take turns in equal time slots, in an order rotating per round; "
                        + "\"vs Redis\" is computed per round from neighbouring slots. ops = Redis commands, SQL "
                        + "statements, ZooKeeper packets or etcd gRPC messages per successful cycle.");
        report.printf(Locale.ROOT, "Load average at start: %s%n", Counters.loadAverage());
        progress("backend comparison");
        BackendComparison.print(BackendComparison.run(backends, full ? 4 : 2, full ? 4_000 : 2_000), report);
        report.printf(Locale.ROOT, "%nLoad average at the end: %s%n", Counters.loadAverage());
    }

    private void hotKey() throws Exception {
        section("One hot key: RLock, RFairLock, distlock REENTRANT and FAIR (issue 13)",
                "64 threads on one key, lock (wait up to 30 s, watchdog) + a counter increment + unlock, then each "
                        + "variant uncontended (1 thread); one redis-server and one application, the variants taking "
                        + "turns in slots rotating per round. Acquisition = from asking to holding; hand-off = from the "
                        + "previous holder's body end to the next, other, holder's body start.");
        progress("hot key comparison");
        HotKeyComparison.print(HotKeyComparison.run(HotKeyComparison.Settings.of(64, full ? 10 : 4, 2)), report);
    }

    private void permits() throws Exception {
        section("Permits: `permits = 3` next to REENTRANT",
                "LockTemplate, wait up to 30 s, watchdog; 1 and 8 threads on keys of their own, then 16 threads on one "
                        + "key; a counter and a gauge of the holders inside the body (most at once must not exceed the "
                        + "permits). The two take turns in slots rotating per round; \"vs REENTRANT\" per round.");
        progress("permits comparison");
        PermitsComparison.print(PermitsComparison.run(PermitsComparison.Settings.of(full ? 3 : 1, full ? 3 : 2)), report);
    }

    private void peers() throws Exception {
        section("Beside Spring Integration's RedisLockRegistry",
                "8 threads on a key each, then 16 threads on one key; every cycle waits up to 30 s and releases at "
                        + "once. `@DistributedLock` (watchdog), `LockTemplate` (fixed 30 s lease), Redisson `RLock` "
                        + "(watchdog), `LockTemplate` with `LockType.FAIR`, and `RedisLockRegistry` (expireAfter 30 s) "
                        + "PUB_SUB and SPIN (on the one key also with a registry per thread, as 16 instances would "
                        + "have), on one redis-server, taking turns in slots rotating per round; \"vs RLock\" per round.");
        progress("peer comparison");
        PeerComparison.print(PeerComparison.run(full ? 8 : 2, full ? 3_000 : 1_000, 8, 16), report);
    }

    private void held() throws Exception {
        HeldLocks.Settings settings = full
                ? new HeldLocks.Settings(new int[] {1_000, 10_000, 50_000, 100_000}, 30_000, 3_000, 30_000, 256)
                : new HeldLocks.Settings(new int[] {1_000, 10_000}, 10_000, 3_000, 0, 256);
        section("Held locks per instance",
                "One client JVM per variant holds watchdog locks on distinct keys (taken through "
                        + "`LockTemplate.acquireAsync`, or `RLock.lockAsync` for raw Redisson), growing size by size, "
                        + "and is measured over a window at each; lost = loss reports received, and locks the server "
                        + "no longer has at the end of the window.");
        progress("held locks");
        HeldLocks.print(HeldLocks.run(java.util.List.of(HeldLocks.Variant.values()), settings), settings, report);
    }

    // ---------------------------------------------------------------- plumbing

    private ChainedOptionsBuilder base(String include) {
        return new OptionsBuilder().include(include).forks(1).jvmArgsAppend("-Xms1g", "-Xmx1g")
                .shouldFailOnError(true);
    }

    private List<RunResult> jmh(String name, ChainedOptionsBuilder options) throws RunnerException {
        progress("JMH " + name);
        return runAll(options.output(dir.resolve(name + ".log").toString())
                .resultFormat(ResultFormatType.JSON).result(dir.resolve(name + ".json").toString()).build());
    }

    private static List<RunResult> runAll(org.openjdk.jmh.runner.options.Options options) throws RunnerException {
        Collection<RunResult> results = new Runner(options).run();
        return new ArrayList<>(results);
    }

    private void section(String title, String explanation) {
        report.println();
        report.println("## " + title);
        report.println();
        report.println(explanation);
        report.println();
    }

    private static void progress(String what) {
        System.err.printf(Locale.ROOT, "[%tT] running %s%n", System.currentTimeMillis(), what);
    }

    private static String param(RunResult r, String name) {
        String value = r.getParams().getParam(name);
        return (value != null) ? value : "";
    }

    private static String gcNorm(RunResult r) {
        Result gc = r.getSecondaryResults().get("gc.alloc.rate.norm");
        return (gc == null) ? "" : String.format(Locale.ROOT, "%.0f", gc.getScore());
    }

    /** Writes to two streams: the report buffer and the console. */
    private static final class TeeStream extends java.io.OutputStream {

        private final java.io.OutputStream first;
        private final java.io.OutputStream second;

        TeeStream(java.io.OutputStream first, java.io.OutputStream second) {
            this.first = first;
            this.second = second;
        }

        @Override
        public void write(int b) throws IOException {
            first.write(b);
            second.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            first.write(b, off, len);
            second.write(b, off, len);
        }

        @Override
        public void flush() throws IOException {
            first.flush();
            second.flush();
        }
    }
}
