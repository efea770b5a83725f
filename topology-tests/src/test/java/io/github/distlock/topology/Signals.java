package io.github.distlock.topology;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;

/**
 * Freezes and thaws a process ({@code SIGSTOP}/{@code SIGCONT}): a replica that stops reading its replication stream,
 * as a replica on a slow or congested link, or stalled by its host, does. The JDK can only terminate processes, so
 * this goes through {@code kill(1)}.
 */
final class Signals {

    private Signals() {
    }

    static void stop(long pid) {
        send("-STOP", pid);
    }

    static void resume(long pid) {
        send("-CONT", pid);
    }

    private static void send(String signal, long pid) {
        try {
            Process kill = new ProcessBuilder("kill", signal, Long.toString(pid)).inheritIO().start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill " + signal + " " + pid + " failed");
            }
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while signalling " + pid, ex);
        }
    }
}
