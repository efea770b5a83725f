package io.github.distlock.redisson;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A TCP proxy between one Redis client and a redis-server, for the network's part in an interleaving. Once told, it
 * drops what Redis answers on the client's command connections but still passes its pub/sub connection (the one that
 * sent SUBSCRIBE): scripts are carried out, their answers are lost (the client times out), and messages still arrive.
 * Or it holds the next command that mentions a given text on its way to Redis (and whatever follows it on that
 * connection) until let through: a command the client sent early that Redis carries out late, after commands the
 * client sent later on its other connections.
 */
final class RedisTestProxy implements AutoCloseable {

    private final ServerSocket serverSocket;
    private final int target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final List<Socket[]> commandConnections = new CopyOnWriteArrayList<>();
    private volatile boolean dropping;
    private volatile boolean closed;
    private volatile String holdMarker;
    private volatile CountDownLatch holding = new CountDownLatch(1);
    private final CountDownLatch letThrough = new CountDownLatch(1);

    private RedisTestProxy(ServerSocket serverSocket, int target) {
        this.serverSocket = serverSocket;
        this.target = target;
    }

    static RedisTestProxy start(int target) {
        try {
            RedisTestProxy proxy = new RedisTestProxy(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()), target);
            Thread acceptor = new Thread(proxy::acceptLoop, "redis-test-proxy-accept");
            acceptor.setDaemon(true);
            acceptor.start();
            return proxy;
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    String uri() {
        return "redis://127.0.0.1:" + serverSocket.getLocalPort();
    }

    void dropCommandReplies() {
        dropping = true;
    }

    /**
     * Holds the next command whose bytes contain {@code marker} on its way to Redis, with everything after it on its
     * connection, until {@link #letHeldThrough()}; the latch counts down once one is held. Once per proxy.
     */
    CountDownLatch holdNextCommandContaining(String marker) {
        holdMarker = marker;
        return holding;
    }

    /** Sends the held command (and what queued behind it) on to Redis. */
    void letHeldThrough() {
        letThrough.countDown();
    }

    /**
     * The end of the outage: the command connections are reset (their lost answers would desynchronise them),
     * the client reconnects, and answers flow again. The pub/sub connection stays.
     */
    void resetCommandConnections() {
        dropping = false;
        for (Socket[] pair : commandConnections) {
            for (Socket socket : pair) {
                try {
                    socket.close();
                }
                catch (IOException ignored) {
                    // closing anyway
                }
            }
        }
        commandConnections.clear();
    }

    @Override
    public void close() {
        closed = true;
        letThrough.countDown();
        try {
            serverSocket.close();
        }
        catch (IOException ignored) {
            // closing anyway
        }
        for (Socket socket : sockets) {
            try {
                socket.close();
            }
            catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket client = serverSocket.accept();
                Socket server = new Socket();
                server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), target), 5_000);
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(server);
                AtomicBoolean subscriber = new AtomicBoolean();
                Socket[] pair = {client, server};
                commandConnections.add(pair);
                pump(client, server, bytes -> {
                    String text = new String(bytes, StandardCharsets.ISO_8859_1);
                    if (text.toUpperCase().contains("SUBSCRIBE")) {
                        subscriber.set(true);
                        commandConnections.remove(pair);
                    }
                    String marker = holdMarker;
                    if (marker != null && text.contains(marker) && holding.getCount() > 0) {
                        holdMarker = null;
                        holding.countDown();
                        awaitLetThrough();
                    }
                    return true;
                });
                pump(server, client, bytes -> subscriber.get() || !dropping);
            }
            catch (IOException ex) {
                return;
            }
        }
    }

    private void awaitLetThrough() {
        try {
            letThrough.await();
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    private void pump(Socket from, Socket to, java.util.function.Predicate<byte[]> pass) {
        Thread thread = new Thread(() -> {
            byte[] buffer = new byte[16 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int read;
                while ((read = in.read(buffer)) != -1) {
                    byte[] chunk = java.util.Arrays.copyOf(buffer, read);
                    if (pass.test(chunk)) {
                        out.write(chunk);
                        out.flush();
                    }
                }
            }
            catch (IOException ex) {
                // one side closed
            }
            finally {
                try {
                    from.close();
                    to.close();
                }
                catch (IOException ignored) {
                    // closed
                }
            }
        }, "redis-test-proxy-pump");
        thread.setDaemon(true);
        thread.start();
    }
}
