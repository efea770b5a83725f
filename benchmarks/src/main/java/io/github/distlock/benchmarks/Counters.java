package io.github.distlock.benchmarks;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import io.github.distlock.testsupport.RedisServer;
import io.github.distlock.testsupport.RespClient;

/**
 * A server's operations by name and CPU time, and this JVM's CPU time, at one moment: what a slot cost is the difference
 * of the counters taken before and after it. Also the readers the harnesses take them with.
 *
 * @param ops operations so far by name (Redis: commands, from {@code INFO commandstats})
 * @param serverCpuNanos the server's CPU time so far
 * @param clientCpuNanos this JVM's CPU time so far (or the part of it that is the client's)
 */
record Counters(Map<String, Long> ops, long serverCpuNanos, long clientCpuNanos) {

    /** All operations so far. */
    long total() {
        return ops.values().stream().mapToLong(Long::longValue).sum();
    }

    /**
     * A {@code redis-server} process on this machine, whose counters are its commands ({@code INFO commandstats}), its
     * CPU time from {@code /proc/<pid>/stat}, and this JVM's CPU time.
     */
    record RedisProcess(int port, long pid, long ticksPerSecond) {

        static RedisProcess of(RedisServer server) {
            return new RedisProcess(server.port(), server.pid(), clockTicksPerSecond());
        }

        Counters take() {
            Map<String, Long> commands = new HashMap<>();
            addRedisCommands(port, commands);
            long[] times = procTimes(pid);
            if (times[0] + times[1] == 0) {
                throw new IllegalStateException("No CPU time in /proc/" + pid + "/stat: is redis-server running?");
            }
            return new Counters(commands, (times[0] + times[1]) * 1_000_000_000L / ticksPerSecond, jvmCpuNanos());
        }
    }

    /** Adds the calls of every command the Redis server at {@code port} has run to {@code into}, by command name. */
    static void addRedisCommands(int port, Map<String, Long> into) {
        for (String line : RespClient.callOnce(port, "INFO", "commandstats").toString().split("\r?\n")) {
            // cmdstat_evalsha:calls=3,usec=...; our own INFO calls are not the lock's
            if (line.startsWith("cmdstat_") && !line.startsWith("cmdstat_info:")) {
                int from = line.indexOf("calls=") + 6;
                into.merge(line.substring(8, line.indexOf(':')),
                        Long.parseLong(line.substring(from, line.indexOf(',', from))), Long::sum);
            }
        }
    }

    /** The CPU time, user + system, of the Redis server at {@code port} ({@code INFO cpu}), in seconds. */
    static double redisCpuSeconds(int port) {
        Map<String, String> info = new HashMap<>();
        for (String line : RespClient.callOnce(port, "INFO", "cpu").toString().split("\r?\n")) {
            int colon = line.indexOf(':');
            if (colon > 0) {
                info.put(line.substring(0, colon), line.substring(colon + 1).trim());
            }
        }
        return Double.parseDouble(info.get("used_cpu_user")) + Double.parseDouble(info.get("used_cpu_sys"));
    }

    /** This JVM's CPU time, every thread of it. */
    static long jvmCpuNanos() {
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        return os.getProcessCpuTime();
    }

    /**
     * The CPU time of this JVM's JIT compiler threads ({@code C1/C2 CompilerThread*}, from
     * {@code /proc/self/task/<tid>/schedstat}), in ns; 0 where {@code /proc} cannot tell. On a small machine they take a
     * core from the measured threads while they compile: a measurement with much of it is not warm yet.
     */
    static long jitCpuNanos() {
        java.io.File[] tasks = new java.io.File("/proc/self/task").listFiles();
        long sum = 0;
        if (tasks == null) {
            return 0;
        }
        for (java.io.File task : tasks) {
            try {
                String comm = Files.readString(task.toPath().resolve("comm")).trim();
                if (comm.startsWith("C1 Compiler") || comm.startsWith("C2 Compiler")) {
                    String schedstat = Files.readString(task.toPath().resolve("schedstat")).trim();
                    sum += Long.parseLong(schedstat.substring(0, schedstat.indexOf(' ')));
                }
            }
            catch (IOException | RuntimeException gone) {
                // a compiler thread that ended meanwhile (HotSpot adds and removes them as it needs)
            }
        }
        return sum;
    }

    /**
     * The machine's busy CPU time since boot, every CPU, in clock ticks of {@link #clockTicksPerSecond()}: user, nice,
     * system, irq, softirq and steal from the first line of {@code /proc/stat}; 0 where it cannot be read.
     */
    static long machineBusyTicks() {
        try {
            String first = Files.readAllLines(Path.of("/proc/stat")).get(0);
            String[] f = first.trim().split("\\s+");
            // cpu user nice system idle iowait irq softirq steal ...
            return Long.parseLong(f[1]) + Long.parseLong(f[2]) + Long.parseLong(f[3]) + Long.parseLong(f[6])
                    + Long.parseLong(f[7]) + Long.parseLong(f[8]);
        }
        catch (IOException | RuntimeException ex) {
            return 0;
        }
    }

    /** utime, stime, cutime, cstime of {@code pid} in clock ticks; zeros for a process that has just exited. */
    static long[] procTimes(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            // fields after the command name in parentheses: state is field 3, utime 14 ... cstime 17
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return new long[] {Long.parseLong(fields[11]), Long.parseLong(fields[12]), Long.parseLong(fields[13]),
                    Long.parseLong(fields[14])};
        }
        catch (IOException | RuntimeException gone) {
            return new long[4];
        }
    }

    /** The clock ticks per second of {@link #procTimes} ({@code getconf CLK_TCK}; 100 when that cannot be asked). */
    static long clockTicksPerSecond() {
        try {
            Process getconf = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
            String out = new String(getconf.getInputStream().readAllBytes()).trim();
            return (getconf.waitFor() == 0) ? Long.parseLong(out) : 100;
        }
        catch (IOException | RuntimeException ex) {
            return 100;
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return 100;
        }
    }

    /** The machine's load average ({@code /proc/loadavg}), or {@code n/a}. */
    static String loadAverage() {
        try {
            Path loadavg = Path.of("/proc/loadavg");
            return Files.exists(loadavg) ? Files.readString(loadavg).trim() : "n/a";
        }
        catch (IOException ex) {
            return "n/a";
        }
    }
}
