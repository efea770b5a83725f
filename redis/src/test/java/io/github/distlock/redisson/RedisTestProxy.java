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
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * A TCP proxy between one Redis client and a redis-server, for the network's part in an interleaving:
 * <ul>
 * <li>once told, it drops what Redis answers on the client's command connections but still passes its pub/sub
 * connection (the one that sent SUBSCRIBE): scripts are carried out, their answers are lost (the client times out),
 * and messages still arrive ({@link #dropCommandReplies()});</li>
 * <li>each {@link Hold} holds the next command (not matched by an earlier hold) whose bytes contain its marker on its
 * way to Redis, with whatever follows on that connection, until {@link Hold#letThrough()}: a command the client sent
 * early that Redis carries out late, after commands sent later on other connections; with {@code holdReply}, the reply
 * that follows on that connection is held too, until {@link Hold#letReplyThrough()}; {@link #holdAndCut} closes the
 * client's side of the connection at once (a request still on its way when its connection died).</li>
 * </ul>
 */
final class RedisTestProxy implements AutoCloseable {

    /** One command held on its way to Redis (see the class comment). */
    final class Hold {

        final String marker;
        final boolean holdReply;
        /** Whether the client's side of the connection is closed once the command is held. */
        volatile boolean cutClient;
        final CountDownLatch held = new CountDownLatch(1);
        private final CountDownLatch through = new CountDownLatch(1);
        final CountDownLatch replyArrived = new CountDownLatch(1);
        private final CountDownLatch replyThrough = new CountDownLatch(1);
        final CountDownLatch replyForwarded = new CountDownLatch(1);

        Hold(String marker, boolean holdReply) {
            this.marker = marker;
            this.holdReply = holdReply;
        }

        void letThrough() {
            through.countDown();
        }

        void letReplyThrough() {
            replyThrough.countDown();
        }

        void release() {
            through.countDown();
            replyThrough.countDown();
        }
    }

    private final ServerSocket serverSocket;
    private final int target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final List<Socket[]> commandConnections = new CopyOnWriteArrayList<>();
    private final List<Hold> pending = new CopyOnWriteArrayList<>();
    private final List<Hold> all = new CopyOnWriteArrayList<>();
    private final java.util.concurrent.atomic.AtomicLong toSubscribers = new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean dropping;
    private volatile boolean closed;

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

    /** Bytes passed on to the client on its pub/sub connections so far: its confirmations and messages. */
    long bytesToSubscribers() {
        return toSubscribers.get();
    }

    void dropCommandReplies() {
        dropping = true;
    }

    /**
     * The end of the outage: the command connections are reset (their lost answers would desynchronise them), the
     * client reconnects, and answers flow again. The pub/sub connection stays.
     */
    void resetCommandConnections() {
        dropping = false;
        for (Socket[] pair : commandConnections) {
            for (Socket socket : pair) {
                closeQuietly(socket);
            }
        }
        commandConnections.clear();
    }

    /** Holds the next command containing {@code marker} on its way to Redis (and its reply, with {@code holdReply}). */
    Hold hold(String marker, boolean holdReply) {
        Hold hold = new Hold(marker, holdReply);
        all.add(hold);
        pending.add(hold);
        return hold;
    }

    /**
     * Holds the next command containing {@code marker}, and closes the client's side of its connection at once: the
     * client sees the connection drop with the command unanswered, while the command itself reaches Redis when let
     * through (a request still on its way when its connection died).
     */
    Hold holdAndCut(String marker) {
        Hold hold = hold(marker, false);
        hold.cutClient = true;
        return hold;
    }

    @Override
    public void close() {
        closed = true;
        all.forEach(Hold::release);
        try {
            serverSocket.close();
        }
        catch (IOException ignored) {
            // closing anyway
        }
        sockets.forEach(RedisTestProxy::closeQuietly);
    }

    private synchronized Hold match(String text) {
        for (Hold hold : pending) {
            if (text.contains(hold.marker)) {
                pending.remove(hold);
                return hold;
            }
        }
        return null;
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
                // the hold whose reply is next on this connection
                AtomicReference<Hold> awaitingReply = new AtomicReference<>();
                pump(client, server, bytes -> {
                    String text = new String(bytes, StandardCharsets.ISO_8859_1);
                    if (text.toUpperCase().contains("SUBSCRIBE")) {
                        subscriber.set(true);
                        commandConnections.remove(pair);
                    }
                    Hold hold = match(text);
                    if (hold != null) {
                        if (hold.cutClient) {
                            closeQuietly(client);
                        }
                        hold.held.countDown();
                        await(hold.through);
                        awaitingReply.set(hold);
                    }
                    return true;
                }, bytes -> { });
                pump(server, client, bytes -> {
                    Hold hold = awaitingReply.get();
                    if (hold != null && hold.holdReply) {
                        hold.replyArrived.countDown();
                        await(hold.replyThrough);
                    }
                    return subscriber.get() || !dropping;
                }, bytes -> {
                    if (subscriber.get()) {
                        toSubscribers.addAndGet(bytes.length);
                    }
                    Hold hold = awaitingReply.getAndSet(null);
                    if (hold != null) {
                        hold.replyArrived.countDown();
                        hold.replyForwarded.countDown();
                    }
                });
            }
            catch (IOException ex) {
                return;
            }
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        }
        catch (IOException ignored) {
            // closing anyway
        }
    }

    /** Copies {@code from} to {@code to}; {@code before} decides whether a chunk passes, {@code after} sees it passed. */
    private void pump(Socket from, Socket to, Predicate<byte[]> before, Consumer<byte[]> after) {
        Thread thread = new Thread(() -> {
            byte[] buffer = new byte[16 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int read;
                while ((read = in.read(buffer)) != -1) {
                    byte[] chunk = java.util.Arrays.copyOf(buffer, read);
                    if (before.test(chunk)) {
                        out.write(chunk);
                        out.flush();
                        after.accept(chunk);
                    }
                }
            }
            catch (IOException ex) {
                // one side closed
            }
            finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "redis-test-proxy-pump");
        thread.setDaemon(true);
        thread.start();
    }
}
