package io.github.distlock.sample;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.awaitility.Awaitility.await;

/**
 * The sample app in a JVM process of its own, on this test's classpath, with its output in a log file. Closing it
 * stops the process (SIGTERM, then SIGKILL after 15 s).
 */
final class AppProcess implements AutoCloseable {

    private static final Pattern STARTED = Pattern.compile("Tomcat started on port (\\d+)");

    private final String name;
    private final Process process;
    private final Path log;
    private volatile int port;

    private AppProcess(String name, Process process, Path log) {
        this.name = name;
        this.process = process;
        this.log = log;
    }

    /** Launches {@code SampleApplication} with these {@code --name=value} arguments on a port of its choosing. */
    static AppProcess launch(String name, Path logDir, List<String> appArgs) {
        return launch(name, logDir, List.of(), appArgs);
    }

    /** {@link #launch(String, Path, List)} with these JVM options as well ({@code -Dspring.aot.enabled=true}). */
    static AppProcess launch(String name, Path logDir, List<String> jvmArgs, List<String> appArgs) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java,
                // small and quick to start: three of these share two cores with the test
                "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
        command.addAll(jvmArgs);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"),
                SampleApplication.class.getName(), "--server.port=0", "--spring.main.banner-mode=off"));
        command.addAll(appArgs);
        try {
            Files.createDirectories(logDir);
            Path log = logDir.resolve(name + ".log");
            Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            return new AppProcess(name, process, log);
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not launch " + name, ex);
        }
    }

    /** Waits until the app serves HTTP; fails at once if the process exits first. */
    void awaitStarted(Duration timeout) {
        await(name + " started").atMost(timeout).pollInterval(Duration.ofMillis(200)).until(() -> {
            if (!process.isAlive()) {
                throw new IllegalStateException(name + " exited with " + process.exitValue() + "; see " + log);
            }
            Matcher matcher = STARTED.matcher(Files.readString(log));
            if (matcher.find()) {
                port = Integer.parseInt(matcher.group(1));
                return true;
            }
            return false;
        });
    }

    String baseUrl() {
        return "http://127.0.0.1:" + port;
    }

    Path log() {
        return log;
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        catch (InterruptedException ex) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
