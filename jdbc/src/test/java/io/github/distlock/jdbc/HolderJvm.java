package io.github.distlock.jdbc;

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

/** A JVM of this test's class path running a main class: killed with SIGKILL, never left behind. */
final class HolderJvm implements AutoCloseable {

    private final Process process;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> output = new CopyOnWriteArrayList<>();

    private HolderJvm(Process process) {
        this.process = process;
        Thread reader = new Thread(this::readOutput, "jvm-" + process.pid() + "-output");
        reader.setDaemon(true);
        reader.start();
    }

    static HolderJvm start(Class<?> main, List<String> arguments) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "-cp", System.getProperty("java.class.path"),
                // a short-lived helper: quick start matters more than peak speed
                "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-Xmx128m", main.getName()));
        command.addAll(arguments);
        try {
            return new HolderJvm(new ProcessBuilder(command).redirectErrorStream(true).start());
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not start " + main.getSimpleName(), ex);
        }
    }

    /** Waits for a line starting with {@code prefix}, and returns it. */
    String await(String prefix, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            String line = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (line == null) {
                throw new AssertionError("JVM " + process.pid() + " did not print '" + prefix + "' within " + timeout
                        + " (alive: " + process.isAlive() + "); its output:\n" + String.join("\n", output));
            }
            if (line.startsWith(prefix)) {
                return line;
            }
        }
    }

    /** Writes {@code line} to the process's standard input. */
    void send(String line) throws IOException {
        process.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
        process.getOutputStream().flush();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    List<String> output() {
        return output;
    }

    /** SIGKILL (on Linux {@code destroyForcibly} is SIGKILL) and wait until the process is gone. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            throw new AssertionError("JVM " + process.pid() + " survived SIGKILL for 10 s");
        }
    }

    /** Waits for the process to end by itself; its exit code. */
    int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("JVM " + process.pid() + " still runs after " + timeout + "; its output:\n"
                    + String.join("\n", output));
        }
        return process.exitValue();
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
            }
        }
        catch (IOException ex) {
            // the process died: its output ends here
        }
    }
}
