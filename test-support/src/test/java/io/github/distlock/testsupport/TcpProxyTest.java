package io.github.distlock.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TcpProxyTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void forwardsHoldsBackWhilePausedAndDeliversOnResumeWithoutClosingTheConnection() throws IOException {
        try (TcpProxy proxy = TcpProxy.start(redis.port());
                Socket socket = new Socket("127.0.0.1", proxy.port())) {
            socket.setSoTimeout(2_000);
            assertThat(ping(socket)).isEqualTo("+PONG");
            assertThat(proxy.connectionCount()).isEqualTo(1);

            proxy.pause();
            socket.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            // the read timeout is the only way to observe "no answer"; 300 ms is ages on loopback
            socket.setSoTimeout(300);
            assertThatThrownBy(() -> socket.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);

            proxy.resume();
            socket.setSoTimeout(2_000);
            assertThat(readLine(socket.getInputStream())).isEqualTo("+PONG");
            assertThat(ping(socket)).isEqualTo("+PONG");
            assertThat(proxy.connectionCount()).isEqualTo(1);
        }
    }

    private static String ping(Socket socket) throws IOException {
        socket.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
        return readLine(socket.getInputStream());
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        int c;
        while ((c = in.read()) != -1 && c != '\n') {
            if (c != '\r') {
                line.append((char) c);
            }
        }
        return line.toString();
    }
}
