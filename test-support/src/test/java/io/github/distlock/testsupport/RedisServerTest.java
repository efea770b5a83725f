package io.github.distlock.testsupport;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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

    @Test
    void reportsTheVersionTheBinaryItselfNames() throws Exception {
        try (RedisServer server = RedisServer.start()) {
            Process process = new ProcessBuilder(server.binary().toString(), "--version").redirectErrorStream(true).start();
            String printed = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(process.waitFor(10, TimeUnit.SECONDS)).isTrue();

            assertThat(server.version()).matches("\\d+\\.\\d+\\.\\d+");
            assertThat(printed).contains("v=" + server.version() + " ");
            assertThat(server).hasToString("redis-server " + server.version() + " " + server.uri() + " ("
                    + server.binary() + ")");
        }
    }

    @Test
    void aServerReportingAnotherVersionThanTheOneAskedForFailsToStartAndLeavesNothingBehind() {
        String before = System.getProperty(RedisServer.VERSION_PROPERTY);
        // no redis-server has ever been 0.1.x: whatever binary this build runs reports another version
        System.setProperty(RedisServer.VERSION_PROPERTY, "0.1");
        try {
            long serversBefore = liveChildren();
            assertThatThrownBy(RedisServer::start)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("reports Redis ")
                    .hasMessageEndingWith("but distlock.redis.version asks for 0.1");
            assertThat(liveChildren()).isEqualTo(serversBefore);
        }
        finally {
            if (before == null) {
                System.clearProperty(RedisServer.VERSION_PROPERTY);
            }
            else {
                System.setProperty(RedisServer.VERSION_PROPERTY, before);
            }
        }
    }

    @Test
    void aVersionPrefixMatchesWholeComponentsOnly() {
        RedisServer.Setting wanted = new RedisServer.Setting("distlock.redis.version", "7.0");
        RedisServer.requireVersion("7.0.15", wanted, "x");
        RedisServer.requireVersion("7.0", wanted, "x");
        RedisServer.requireVersion("6.2.6", null, "x");

        assertThatThrownBy(() -> RedisServer.requireVersion("7.01.0", wanted, "redis-server from /usr/bin/redis-server"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("redis-server from /usr/bin/redis-server reports Redis 7.01.0, but distlock.redis.version "
                        + "asks for 7.0");
        assertThatThrownBy(() -> RedisServer.requireVersion("6.2.6", wanted, "x"))
                .hasMessageContaining("reports Redis 6.2.6");
    }

    @Test
    void readsTheVersionFromInfoServer() {
        assertThat(RedisServer.versionIn("# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n"))
                .isEqualTo("7.0.15");
        assertThat(RedisServer.versionIn("# Server\r\nredis_git_sha1:00000000\r\n")).isNull();
        assertThat(RedisServer.versionIn(null)).isNull();
    }

    @Test
    void aConfiguredBinaryThatIsNoExecutableFileFailsNamingTheSetting(@TempDir Path dir) throws Exception {
        Path notExecutable = Files.writeString(dir.resolve("redis-server"), "not a binary");

        assertThatThrownBy(() -> RedisServer.configuredBinary(
                new RedisServer.Setting("distlock.redis.server", dir.resolve("missing").toString())))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("distlock.redis.server=" + dir.resolve("missing")
                        + " is not an executable file: name a redis-server binary, e.g. /usr/bin/redis-server");
        assertThatThrownBy(() -> RedisServer.configuredBinary(
                new RedisServer.Setting("DISTLOCK_REDIS_SERVER", notExecutable.toString())))
                .hasMessageStartingWith("DISTLOCK_REDIS_SERVER=" + notExecutable + " is not an executable file");
        assertThatThrownBy(() -> RedisServer.configuredBinary(
                new RedisServer.Setting("distlock.redis.server", dir.toString())))
                .hasMessageStartingWith("distlock.redis.server=" + dir + " is not an executable file");
    }

    private static long liveChildren() {
        return ProcessHandle.current().children().filter(ProcessHandle::isAlive).count();
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
