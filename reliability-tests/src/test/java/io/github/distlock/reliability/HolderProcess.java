package io.github.distlock.reliability;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A {@link LockHolderMain} JVM: started on this test's class path, killed with SIGKILL, never left behind. */
final class HolderProcess implements AutoCloseable {

    private final Process process;
    private final BlockingQueue<String> holdingLines = new LinkedBlockingQueue<>();
    private final List<String> output = new CopyOnWriteArrayList<>();

    private HolderProcess(Process process) {
        this.process = process;
        Thread reader = new Thread(this::readOutput, "holder-" + process.pid() + "-output");
        reader.setDaemon(true);
        reader.start();
    }

    static HolderProcess start(int redisPort, String key, Duration lease, Duration watchdogTimeout) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder builder = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                // a short-lived helper: quick start matters more than peak speed
                "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-Xmx256m",
                LockHolderMain.class.getName(), Integer.toString(redisPort), key,
                Long.toString(lease.toMillis()), Long.toString(watchdogTimeout.toMillis()))
                .redirectErrorStream(true);
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
