package io.github.distlock.chaos;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.github.distlock.testsupport.TcpProxy;

/**
 * A {@link ChaosClientMain} JVM with a proxy of its own in front of every server it reaches: it can be paused
 * (SIGSTOP, as a long GC pause), cut off (its proxies stall: a partition), or killed (SIGKILL). Its output goes to
 * {@code <client>.log} beside its history.
 */
final class ClientProcess implements AutoCloseable {

    private final String id;
    private final Process process;
    private final Map<Integer, TcpProxy> proxies;
    private final CountDownLatch ready = new CountDownLatch(1);

    private ClientProcess(String id, Process process, Map<Integer, TcpProxy> proxies, Path log) {
        this.id = id;
        this.process = process;
        this.proxies = proxies;
        Thread reader = new Thread(() -> copyOutput(log), "client-" + id + "-output");
        reader.setDaemon(true);
        reader.start();
    }

    static ClientProcess start(String id, Topology topology, Path dir, List<String> settings) {
        Map<Integer, TcpProxy> proxies = new LinkedHashMap<>();
        Map<Integer, Integer> proxyPorts = new LinkedHashMap<>();
        for (int port : topology.clientPorts()) {
            TcpProxy proxy = TcpProxy.start(port);
            proxies.put(port, proxy);
            proxyPorts.put(port, proxy.port());
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "-cp", System.getProperty("java.class.path"),
                "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", ChaosClientMain.class.getName(),
                "--chaos.client=" + id, "--chaos.history=" + dir.resolve(id + ".history")));
        command.addAll(settings);
        if (!topology.backend().equals("jdbc")) {
            // the database backend is on the class path for the PostgreSQL runs; no other run has a database
            command.add("--spring.autoconfigure.exclude="
                    + "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration");
        }
        command.addAll(topology.clientProperties(proxyPorts));
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            return new ClientProcess(id, process, proxies, dir.resolve(id + ".log"));
        }
        catch (IOException ex) {
            proxies.values().forEach(TcpProxy::close);
            throw new UncheckedIOException("Could not start client " + id, ex);
        }
    }

    String id() {
        return id;
    }

    void awaitReady(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!ready.await(100, TimeUnit.MILLISECONDS)) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                throw new IllegalStateException("Client " + id + " did not start within " + timeout + " (alive: "
                        + process.isAlive() + "); see its log");
            }
        }
    }

    /** Starts the workload of a client that printed READY. */
    void go() {
        send("GO");
    }

    /** SIGSTOP: the JVM stops where it is, its connections stay open. */
    void pause() {
        signal("-STOP");
    }

    void resume() {
        signal("-CONT");
    }

    /** Stalls every connection of this client, both directions, keeping them open. */
    void cut() {
        proxies.values().forEach(TcpProxy::pause);
    }

    /** Stalls this client's connections to one server. */
    void cut(int serverPort) {
        proxies.get(serverPort).pause();
    }

    /** Lets traffic to one server through again, after closing the stalled connections when {@code reset}. */
    void reconnect(int serverPort, boolean reset) {
        if (reset) {
            proxies.get(serverPort).dropConnections();
        }
        proxies.get(serverPort).resume();
    }

    /** Lets traffic through again; {@code reset} first closes the stalled connections, as a broken network would. */
    void reconnect(boolean reset) {
        if (reset) {
            proxies.values().forEach(TcpProxy::dropConnections);
        }
        proxies.values().forEach(TcpProxy::resume);
    }

    /** SIGKILL, and waits until the process is gone. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("Client " + id + " survived SIGKILL for 10 s");
        }
    }

    /** Asks the client to finish its operations and exit; kills it when it does not within {@code timeout}. */
    boolean stop(Duration timeout) throws InterruptedException {
        if (process.isAlive()) {
            send("STOP");
        }
        boolean exited = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (!exited) {
            kill();
        }
        return exited;
    }

    private void send(String line) {
        try {
            process.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
            process.getOutputStream().flush();
        }
        catch (IOException ex) {
            // it is dying anyway
        }
    }

    boolean isAlive() {
        return process.isAlive();
    }

    @Override
    public void close() throws InterruptedException {
        try {
            if (process.isAlive()) {
                signal("-CONT");
                kill();
            }
        }
        finally {
            proxies.values().forEach(TcpProxy::close);
        }
    }

    private void signal(String signal) {
        try {
            Process kill = new ProcessBuilder("kill", signal, Long.toString(process.pid())).inheritIO().start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill " + signal + " " + process.pid() + " failed");
            }
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while signalling client " + id, ex);
        }
    }

    private void copyOutput(Path log) {
        try (BufferedReader reader = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                PrintWriter out = new PrintWriter(Files.newBufferedWriter(log, StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND))) {
            String line;
            while ((line = reader.readLine()) != null) {
                out.println(line);
                out.flush();
                if (line.equals("READY")) {
                    ready.countDown();
                }
            }
        }
        catch (IOException ex) {
            // the process died: its output ends here
        }
    }
}
