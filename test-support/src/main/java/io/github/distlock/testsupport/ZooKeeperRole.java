package io.github.distlock.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/** A ZooKeeper server's role in its ensemble, asked over its client port with the {@code srvr} command (on by default). */
public final class ZooKeeperRole {

    private ZooKeeperRole() {
    }

    /**
     * The role of the server on {@code clientPort}: {@code "leader"}, {@code "follower"}, {@code "standalone"}, or
     * {@code null} when it does not answer (down, or not serving yet).
     */
    public static String of(int clientPort) {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), clientPort)) {
            socket.setSoTimeout(2000);
            OutputStream out = socket.getOutputStream();
            out.write("srvr".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            String answer = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
            return answer.lines().filter(line -> line.startsWith("Mode: ")).map(line -> line.substring(6).trim())
                    .findFirst().orElse(null);
        }
        catch (IOException ex) {
            return null;
        }
    }
}
