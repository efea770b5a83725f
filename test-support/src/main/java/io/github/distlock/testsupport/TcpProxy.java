package io.github.distlock.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy on a free loopback port that forwards every connection to a target port, and can stall the traffic
 * without closing anything: {@link #pause()} stops forwarding bytes in both directions, {@link #resume()} lets the
 * held bytes through. That is what a network partition or a long GC pause of a router looks like to a client: its
 * connections stay open, its commands get no answer, and it cannot tell whether they reached the server.
 *
 * <pre>{@code
 * try (TcpProxy proxy = TcpProxy.start(redis.port())) {
 *     // connect the client to proxy.port()
 *     proxy.pause();
 *     ...
 *     proxy.resume();
 * }
 * }</pre>
 *
 * <p>While paused, new connections are still accepted (the kernel completes the handshake anyway), but no byte flows
 * on them either.
 */
public final class TcpProxy implements AutoCloseable {

    private static final int BUFFER_SIZE = 16 * 1024;

    private final int targetPort;
    private final ServerSocket serverSocket;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Object gate = new Object();
    private final AtomicInteger connections = new AtomicInteger();
    private final AtomicLong bytesForwarded = new AtomicLong();
    private volatile boolean paused;
    /** Server-to-client bytes are held back (requests still reach the server: "the answer was lost"). */
    private volatile boolean repliesHeld;
    private volatile boolean closed;

    private TcpProxy(int targetPort, ServerSocket serverSocket) {
        this.targetPort = targetPort;
        this.serverSocket = serverSocket;
    }

    /**
     * Starts a proxy on a free loopback port that forwards to {@code 127.0.0.1:targetPort}.
     *
     * @param targetPort the port of the server behind the proxy
     * @return the running proxy
     */
    public static TcpProxy start(int targetPort) {
        try {
            ServerSocket serverSocket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            TcpProxy proxy = new TcpProxy(targetPort, serverSocket);
            Thread acceptor = new Thread(proxy::acceptLoop, "tcp-proxy-accept-" + serverSocket.getLocalPort());
            acceptor.setDaemon(true);
            acceptor.start();
            return proxy;
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not open a proxy port", ex);
        }
    }

    /** The loopback port clients connect to. */
    public int port() {
        return serverSocket.getLocalPort();
    }

    /** A {@code redis://127.0.0.1:port} address of the proxy, as Redisson and Lettuce take it. */
    public String uri() {
        return "redis://127.0.0.1:" + port();
    }

    /** The port traffic is forwarded to. */
    public int targetPort() {
        return targetPort;
    }

    /** Stops forwarding in both directions; connections stay open and bytes already read are held back. */
    public void pause() {
        paused = true;
    }

    /** Forwards again, starting with the bytes held back while paused. */
    public void resume() {
        synchronized (gate) {
            paused = false;
            gate.notifyAll();
        }
    }

    /**
     * Holds back what the server sends, while requests still reach it: with {@link #dropConnections()}, a request the
     * server carried out whose answer the client never gets.
     */
    public void holdReplies() {
        repliesHeld = true;
    }

    /**
     * Closes every connection proxied so far (bytes held back are dropped), as a reset connection would end; the
     * proxy keeps accepting new ones, so a client that reconnects gets through (subject to {@link #pause()}).
     */
    public void dropConnections() {
        sockets.forEach(TcpProxy::closeQuietly);
        synchronized (gate) {
            repliesHeld = false;
            gate.notifyAll();
        }
    }

    /** Whether forwarding is paused. */
    public boolean isPaused() {
        return paused;
    }

    /** How many client connections the proxy has accepted so far. */
    public int connectionCount() {
        return connections.get();
    }

    /** How many bytes the proxy has forwarded so far, both directions together. */
    public long bytesForwarded() {
        return bytesForwarded.get();
    }

    /** Closes the listening port and every proxied connection. */
    @Override
    public void close() {
        closed = true;
        resume();
        closeQuietly(serverSocket);
        sockets.forEach(TcpProxy::closeQuietly);
    }

    @Override
    public String toString() {
        return "TcpProxy 127.0.0.1:" + port() + " -> 127.0.0.1:" + targetPort + (paused ? " (paused)" : "");
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = serverSocket.accept();
            }
            catch (IOException ex) {
                return; // closed
            }
            Socket server = new Socket();
            try {
                server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort), 5_000);
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
            }
            catch (IOException ex) {
                // the target is down (e.g. being restarted): the client sees a closed connection, as it would directly
                closeQuietly(client);
                closeQuietly(server);
                continue;
            }
            sockets.add(client);
            sockets.add(server);
            connections.incrementAndGet();
            startPump(client, server, "up", false);
            startPump(server, client, "down", true);
        }
    }

    private void startPump(Socket from, Socket to, String direction, boolean reply) {
        Thread pump = new Thread(() -> pump(from, to, reply), "tcp-proxy-" + direction + "-" + from.getPort());
        pump.setDaemon(true);
        pump.start();
    }

    private void pump(Socket from, Socket to, boolean reply) {
        byte[] buffer = new byte[BUFFER_SIZE];
        try {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            int read;
            while ((read = in.read(buffer)) != -1) {
                awaitForwarding(reply);
                if (closed) {
                    break;
                }
                out.write(buffer, 0, read);
                out.flush();
                bytesForwarded.addAndGet(read);
            }
        }
        catch (IOException ex) {
            // one side closed or reset: close both, as a real connection would end
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        finally {
            closeQuietly(from);
            closeQuietly(to);
            sockets.remove(from);
            sockets.remove(to);
        }
    }

    private void awaitForwarding(boolean reply) throws InterruptedException {
        synchronized (gate) {
            while ((paused || (reply && repliesHeld)) && !closed) {
                gate.wait();
            }
        }
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        }
        catch (Exception ex) {
            // nothing left to do with a socket that will not close
        }
    }
}
