package io.github.distlock.chaos;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The storage the workload's operations read and write under their locks: one set of strings per key, independent of
 * every lock backend and never faulted, in the runner's JVM on a free loopback port.
 *
 * <p>For a fenced key (a request with a token {@code >= 0}) it does what storage taking part in fencing does: it
 * remembers the highest token it has seen for the key, in reads and writes, and refuses a read or write carrying a
 * lower one; a write must also carry a token higher than the last write it accepted. Checking reads as well as writes
 * is what makes a read-modify-write safe: a holder whose lease ran out and who read before the next holder still has
 * its write refused once the next holder has read. Unfenced requests (token {@code -1}) are always served. {@code -Dchaos.store.fencing=writes}
 * (refuse only a write whose token is not above the last accepted) or {@code off} shows what the checks buy.
 *
 * <p>Protocol, one line each way: {@code R <key> <token>} answers {@code V <e1,e2,...>} or {@code X} (refused);
 * {@code W <key> <token> <op> <e1,e2,...>} answers {@code OK <seq>} (the write's place in the order the store
 * accepted writes in) or {@code X}.
 */
final class SetStore implements AutoCloseable {

    /** A write the store accepted. */
    record Write(long seq, String key, long token, String op) {
    }

    private static final class Entry {
        List<String> elements = List.of();
        long lastWriteAt = Long.MIN_VALUE;
        long highestSeen = Long.MIN_VALUE;
        long lastWrite = Long.MIN_VALUE;
    }

    /** How the store checks tokens: on reads and writes (what makes a read-modify-write safe), writes only, not at all. */
    enum Fencing { FULL, WRITES, OFF }

    private final Fencing fencing;
    private final ServerSocket server;
    private final Map<String, Entry> entries = new HashMap<>();
    private final List<Write> accepted = new ArrayList<>();
    private final List<Socket> connections = new CopyOnWriteArrayList<>();
    private long seq;
    private long refused;
    private volatile boolean closed;

    SetStore(Fencing fencing) {
        this.fencing = fencing;
        try {
            server = new ServerSocket(0, 100, InetAddress.getLoopbackAddress());
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        Thread acceptor = new Thread(this::accept, "set-store-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return server.getLocalPort();
    }

    /** The key's elements now. */
    synchronized List<String> elements(String key) {
        Entry entry = entries.get(key);
        return (entry != null) ? entry.elements : List.of();
    }

    /** Whether every one of {@code keys} took a write at or after {@code since} (µs of the monotonic clock). */
    synchronized boolean allWrittenSince(List<String> keys, long since) {
        return keys.stream().allMatch(key -> entries.containsKey(key) && entries.get(key).lastWriteAt >= since);
    }

    synchronized Map<String, List<String>> snapshot() {
        Map<String, List<String>> copy = new HashMap<>();
        entries.forEach((key, entry) -> copy.put(key, entry.elements));
        return copy;
    }

    synchronized List<Write> acceptedWrites() {
        return List.copyOf(accepted);
    }

    synchronized long refusals() {
        return refused;
    }

    synchronized String read(String key, long token) {
        Entry entry = entries.computeIfAbsent(key, k -> new Entry());
        if (token >= 0 && fencing == Fencing.FULL) {
            if (token < entry.highestSeen) {
                refused++;
                return "X";
            }
            entry.highestSeen = token;
        }
        return "V " + String.join(",", entry.elements);
    }

    synchronized String write(String key, long token, String op, List<String> elements) {
        Entry entry = entries.computeIfAbsent(key, k -> new Entry());
        if (token >= 0 && fencing != Fencing.OFF) {
            if (token < entry.highestSeen || token <= entry.lastWrite) {
                refused++;
                return "X";
            }
            entry.highestSeen = token;
            entry.lastWrite = token;
        }
        entry.elements = List.copyOf(elements);
        entry.lastWriteAt = ChaosRun.now();
        accepted.add(new Write(++seq, key, token, op));
        return "OK " + seq;
    }

    private void accept() {
        while (!closed) {
            try {
                Socket socket = server.accept();
                connections.add(socket);
                Thread serving = new Thread(() -> serve(socket), "set-store-" + socket.getPort());
                serving.setDaemon(true);
                serving.start();
            }
            catch (IOException ex) {
                if (!closed) {
                    ex.printStackTrace();
                }
            }
        }
    }

    private void serve(Socket socket) {
        try (socket;
                BufferedReader in = new BufferedReader(
                        new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                PrintWriter out = new PrintWriter(
                        new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.UTF_8), false)) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] parts = line.split(" ", 5);
                String answer = switch (parts[0]) {
                    case "R" -> read(parts[1], Long.parseLong(parts[2]));
                    case "W" -> write(parts[1], Long.parseLong(parts[2]), parts[3],
                            (parts.length < 5 || parts[4].isEmpty()) ? List.of() : Arrays.asList(parts[4].split(",")));
                    default -> throw new IllegalArgumentException("Unknown request: " + line);
                };
                out.println(answer);
                out.flush();
            }
        }
        catch (IOException ex) {
            // a client killed or stopped: its connection ends here
        }
        finally {
            connections.remove(socket);
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        }
        catch (IOException ex) {
            // closing
        }
        connections.forEach(socket -> {
            try {
                socket.close();
            }
            catch (IOException ex) {
                // closing
            }
        });
    }
}
