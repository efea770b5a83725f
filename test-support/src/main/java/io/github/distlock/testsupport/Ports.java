package io.github.distlock.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;

/** Free loopback ports for the servers started here; never fixed ones, so parallel builds do not collide. */
final class Ports {

    private static final String HOST = "127.0.0.1";
    /** A cluster node also listens on its port + 10000 for the cluster bus. */
    static final int CLUSTER_BUS_OFFSET = 10_000;
    private static final int LOWEST = 10_000;

    private Ports() {
    }

    /** A port the kernel picks from its ephemeral range, free at the time of asking. */
    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        }
        catch (IOException ex) {
            throw new UncheckedIOException("No free loopback port", ex);
        }
    }

    /**
     * A port that is free and whose cluster bus port (port + 10000) is free too.
     *
     * <p>Picked at random below the kernel's ephemeral range, bus port included: the kernel hands ports of that range
     * to outgoing connections (Redisson's, Lettuce's, the cluster's own), and one of those could take a probed bus port
     * before the node binds it. Other listeners in the range are what the probe catches; a port taken between probe
     * and bind makes the server fail to start, and {@link RedisServer} tries another.
     */
    static int freeClusterPort() {
        int highest = ephemeralRangeStart() - 1 - CLUSTER_BUS_OFFSET;
        if (highest < LOWEST + 1_000) {
            // an ephemeral range that starts low leaves no room below it: take any pair and rely on the probe
            highest = 65_535 - CLUSTER_BUS_OFFSET - 1;
        }
        for (int attempt = 0; attempt < 100; attempt++) {
            int port = ThreadLocalRandom.current().nextInt(LOWEST, highest + 1);
            if (isFree(port) && isFree(port + CLUSTER_BUS_OFFSET)) {
                return port;
            }
        }
        throw new IllegalStateException("No free loopback port pair (port, port + 10000) below " + highest);
    }

    /**
     * A free port below the kernel's ephemeral range, for a server that is killed and started again on the same port:
     * while it is down, a port of the ephemeral range may be handed to an outgoing connection (a client reconnecting
     * to it, say) and the restart could not bind it.
     */
    static int freeRestartablePort() {
        int highest = ephemeralRangeStart() - 1;
        if (highest < LOWEST + 1_000) {
            return freePort();
        }
        for (int attempt = 0; attempt < 100; attempt++) {
            int port = ThreadLocalRandom.current().nextInt(LOWEST, highest + 1);
            if (isFree(port)) {
                return port;
            }
        }
        throw new IllegalStateException("No free loopback port below " + highest);
    }

    private static boolean isFree(int port) {
        try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getByName(HOST))) {
            return true;
        }
        catch (IOException ex) {
            return false;
        }
    }

    /** Linux tells; elsewhere assume the IANA range (macOS uses it), whose start leaves the most room. */
    private static int ephemeralRangeStart() {
        try {
            String range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim();
            return Integer.parseInt(range.split("\\s+")[0]);
        }
        catch (IOException | RuntimeException ex) {
            return 49_152;
        }
    }
}
