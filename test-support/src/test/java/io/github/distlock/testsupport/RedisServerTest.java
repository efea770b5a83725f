package io.github.distlock.testsupport;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RedisServerTest {

    @Test
    void startsOnAFreePortAndStopsAndRestartsOnTheSamePort() {
        try (RedisServer server = RedisServer.start()) {
            assertThat(server.isRunning()).isTrue();
            assertThat(accepts(server.port())).isTrue();
            int port = server.port();

            server.stop();
            assertThat(server.isRunning()).isFalse();
            assertThat(accepts(port)).isFalse();

            server.restart();
            assertThat(server.port()).isEqualTo(port);
            assertThat(accepts(port)).isTrue();
        }
    }

    @Test
    void killLeavesNoProcessButKeepsTheDirectoryUntilClose() {
        RedisServer server = RedisServer.start();
        long pid = server.pid();
        assertThat(Files.isDirectory(server.directory())).isTrue();

        server.kill();
        assertThat(server.isRunning()).isFalse();
        assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
        assertThat(accepts(server.port())).isFalse();
        assertThat(Files.isDirectory(server.directory())).isTrue();

        server.restart();
        assertThat(RespClient.callOnce(server.port(), "PING")).isEqualTo("PONG");
        long restartedPid = server.pid();

        server.close();
        assertThat(ProcessHandle.of(restartedPid).filter(ProcessHandle::isAlive)).isEmpty();
        assertThat(Files.exists(server.directory())).isFalse();
    }

    @Test
    void failsClearlyWhenThePortIsTaken() {
        try (RedisServer first = RedisServer.start()) {
            assertThatThrownBy(() -> RedisServer.start(first.port()))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(Integer.toString(first.port()));
        }
    }

    private static boolean accepts(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return true;
        }
        catch (IOException ex) {
            return false;
        }
    }
}
