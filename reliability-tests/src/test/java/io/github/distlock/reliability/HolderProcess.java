package io.github.distlock.reliability;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.github.distlock.LockType;

/** A {@link LockHolderMain} JVM (or another main class of the tests): started on this test's class path, killed with SIGKILL, never left behind. */
final class HolderProcess implements AutoCloseable {

    private final Process process;
    private final BlockingQueue<String> holdingLines = new LinkedBlockingQueue<>();
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> output = new CopyOnWriteArrayList<>();

    private HolderProcess(Process process) {
        this.process = process;
        Thread reader = new Thread(this::readOutput, "holder-" + process.pid() + "-output");
        reader.setDaemon(true);
        reader.start();
    }

    static HolderProcess start(int redisPort, String key, Duration lease, Duration watchdogTimeout) {
        return start(redisPort, key, lease, watchdogTimeout, LockType.REENTRANT);
    }

    /** A holder of a lock of the given type. */
    static HolderProcess start(int redisPort, String key, Duration lease, Duration watchdogTimeout, LockType type) {
        // a short-lived helper: quick start matters more than peak speed
        return start(List.of("-XX:TieredStopAtLevel=1"), LockHolderMain.class, Integer.toString(redisPort), key,
                Long.toString(lease.toMillis()), Long.toString(watchdogTimeout.toMillis()), type.name());
    }

    /** A holder of one of {@code permits} permits of the key (watchdog or fixed lease). */
    static HolderProcess startPermit(int redisPort, String key, Duration lease, Duration watchdogTimeout, int permits) {
        return start(List.of("-XX:TieredStopAtLevel=1"), LockHolderMain.class, Integer.toString(redisPort), key,
                Long.toString(lease.toMillis()), Long.toString(watchdogTimeout.toMillis()), LockType.REENTRANT.name(),
                Integer.toString(permits));
    }

    /** Any main class of this test class path in its own JVM, with extra JVM options. */
    static HolderProcess start(List<String> jvmOptions, Class<?> mainClass, String... args) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "-cp", System.getProperty("java.class.path"),
                "-Xshare:auto", "-Xmx256m"));
        command.addAll(jvmOptions);
        command.add(mainClass.getName());
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        try {
            return new HolderProcess(builder.start());
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not start the holder JVM", ex);
        }
    }

    /**
     * Waits for the holder to report it holds the lock.
     *
     * @return the epoch ms the holder took just before it asked for the lock
     */
    long awaitHolding(Duration timeout) throws InterruptedException {
        String line = holdingLines.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (line == null) {
            throw new AssertionError("Holder did not report HOLDING within " + timeout + " (alive: " + process.isAlive()
                    + "); its output:\n" + String.join("\n", output));
        }
        return Long.parseLong(line.substring("HOLDING ".length()).trim());
    }

    /**
     * Waits for the next output line that starts with {@code prefix} (lines with other prefixes are skipped).
     *
     * @return the rest of the line after the prefix
     */
    String awaitLine(String prefix, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            String line = lines.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (line == null) {
                throw new AssertionError("Process " + process.pid() + " printed no line starting with '" + prefix
                        + "' within " + timeout + " (alive: " + process.isAlive() + "); its output:\n" + output());
            }
            if (line.startsWith(prefix)) {
                return line.substring(prefix.length()).trim();
            }
        }
    }

    /** Sends one line to the process's standard input. */
    void send(String line) {
        try {
            process.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
            process.getOutputStream().flush();
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not write to process " + process.pid() + " (alive: "
                    + process.isAlive() + "); its output:\n" + output(), ex);
        }
    }

    /** Everything the process printed so far. */
    String output() {
        return String.join("\n", output);
    }

    /** Waits for the process to exit by itself; returns its exit code. */
    int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("Process " + process.pid() + " did not exit within " + timeout + "; its output:\n"
                    + output());
        }
        return process.exitValue();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** SIGKILL (on Linux {@code destroyForcibly} is SIGKILL) and wait until the process is gone. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            throw new AssertionError("Holder " + process.pid() + " survived SIGKILL for 10 s");
        }
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }

    private void readOutput() {
        try (BufferedReader reader = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                output.add(line);
                lines.add(line);
                if (line.startsWith("HOLDING ")) {
                    holdingLines.add(line);
                }
            }
        }
        catch (IOException ex) {
            // the process died: its output ends here
        }
    }
}
