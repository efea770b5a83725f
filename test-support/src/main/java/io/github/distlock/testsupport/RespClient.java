package io.github.distlock.testsupport;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * A minimal blocking RESP2 client over one socket, for setting up and inspecting the test servers (cluster slots,
 * replication, sentinels) without bringing a Redis client library into every module's test classpath, and without
 * going through the client under test.
 *
 * <p>Replies map to Java as: simple and bulk strings to {@link String} (UTF-8), integers to {@link Long}, arrays to
 * {@link List}, nil to {@code null}; an error reply throws {@link ServerError}. Not thread-safe.
 *
 * <pre>{@code
 * try (RespClient redis = RespClient.connect(port)) {
 *     redis.call("SET", "k", "v");
 *     String info = redis.callString("CLUSTER", "INFO");
 * }
 * }</pre>
 */
public final class RespClient implements AutoCloseable {

    private static final String HOST = "127.0.0.1";
    private static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

    private final int port;
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    private RespClient(int port, Socket socket) throws IOException {
        this.port = port;
        this.socket = socket;
        this.in = new BufferedInputStream(socket.getInputStream());
        this.out = new BufferedOutputStream(socket.getOutputStream());
    }

    /**
     * Connects to {@code 127.0.0.1:port} with a 2 s connect and read timeout.
     *
     * @param port the server's port
     * @return the connected client
     * @throws UncheckedIOException when nothing accepts the connection
     */
    public static RespClient connect(int port) {
        return connect(port, DEFAULT_TIMEOUT);
    }

    /**
     * Connects to {@code 127.0.0.1:port}.
     *
     * @param port the server's port
     * @param timeout the connect timeout, and the read timeout of every later reply
     * @return the connected client
     * @throws UncheckedIOException when nothing accepts the connection
     */
    public static RespClient connect(int port, Duration timeout) {
        Socket socket = new Socket();
        try {
            socket.connect(new InetSocketAddress(HOST, port), (int) timeout.toMillis());
            socket.setSoTimeout((int) timeout.toMillis());
            socket.setTcpNoDelay(true);
            return new RespClient(port, socket);
        }
        catch (IOException ex) {
            closeQuietly(socket);
            throw new UncheckedIOException("Cannot connect to " + HOST + ":" + port, ex);
        }
    }

    /**
     * Sends one command on a new connection and returns its reply: for the one-off administrative call.
     *
     * @param port the server's port
     * @param command the command and its arguments, e.g. {@code "CLUSTER", "INFO"}
     * @return the reply, mapped as described in the class comment
     */
    public static Object callOnce(int port, String... command) {
        try (RespClient client = connect(port)) {
            return client.call(command);
        }
    }

    /**
     * Sends one command and waits for its reply.
     *
     * @param command the command and its arguments
     * @return the reply, mapped as described in the class comment
     * @throws ServerError when the server answers with an error
     * @throws UncheckedIOException when the connection fails or the reply does not come within the timeout
     */
    public Object call(String... command) {
        return call(List.of(command));
    }

    /**
     * Sends one command given as a collection (handy for commands with thousands of arguments, such as
     * {@code CLUSTER ADDSLOTS}) and waits for its reply.
     *
     * @param command the command and its arguments
     * @return the reply, mapped as described in the class comment
     * @throws ServerError when the server answers with an error
     * @throws UncheckedIOException when the connection fails or the reply does not come within the timeout
     */
    public Object call(Collection<String> command) {
        try {
            write(command);
            return read();
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Redis at " + HOST + ":" + port + " did not answer " + name(command), ex);
        }
    }

    /**
     * Sends one command whose reply is a string (status, bulk string or nil).
     *
     * @param command the command and its arguments
     * @return the reply, {@code null} for nil
     * @throws IllegalStateException when the reply is not a string
     */
    public String callString(String... command) {
        Object reply = call(command);
        if (reply != null && !(reply instanceof String)) {
            throw new IllegalStateException(name(List.of(command)) + " answered " + reply + ", not a string");
        }
        return (String) reply;
    }

    /** The port this client is connected to. */
    public int port() {
        return port;
    }

    /** Closes the connection. */
    @Override
    public void close() {
        closeQuietly(socket);
    }

    private void write(Collection<String> command) throws IOException {
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        buffer.writeBytes(("*" + command.size() + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (String argument : command) {
            byte[] bytes = argument.getBytes(StandardCharsets.UTF_8);
            buffer.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            buffer.writeBytes(bytes);
            buffer.writeBytes(new byte[] {'\r', '\n'});
        }
        buffer.writeTo(out);
        out.flush();
    }

    private Object read() throws IOException {
        int type = in.read();
        if (type == -1) {
            throw new EOFException("connection closed");
        }
        String line = readLine();
        switch (type) {
            case '+':
                return line;
            case '-':
                throw new ServerError(line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int length = Integer.parseInt(line);
                if (length < 0) {
                    return null;
                }
                byte[] bytes = in.readNBytes(length);
                if (bytes.length < length || in.read() != '\r' || in.read() != '\n') {
                    throw new EOFException("truncated bulk string");
                }
                return new String(bytes, StandardCharsets.UTF_8);
            }
            case '*': {
                int count = Integer.parseInt(line);
                if (count < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    // an error inside an array (e.g. in EXEC) is a value there, not a failure of the whole reply
                    try {
                        items.add(read());
                    }
                    catch (ServerError error) {
                        items.add(error);
                    }
                }
                return items;
            }
            default:
                throw new IOException("Not a RESP2 reply, type byte " + type);
        }
    }

    private String readLine() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != '\r') {
            if (c == -1) {
                throw new EOFException("connection closed mid-reply");
            }
            line.write(c);
        }
        if (in.read() != '\n') {
            throw new IOException("CR without LF in reply");
        }
        return line.toString(StandardCharsets.UTF_8);
    }

    private static String name(Collection<String> command) {
        return command.stream().limit(2).reduce((a, b) -> a + " " + b).orElse("(empty command)");
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        }
        catch (IOException ex) {
            // nothing to do about a socket that will not close
        }
    }

    /** An error reply from the server ({@code -ERR ...}, {@code -MOVED ...}, ...): the server is fine, the command not. */
    public static final class ServerError extends RuntimeException {

        private static final long serialVersionUID = 1L;

        /**
         * @param message the error line as the server sent it, without the leading {@code -}
         */
        public ServerError(String message) {
            super(message);
        }
    }
}
