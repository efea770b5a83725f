package io.github.distlock.spi;

import java.util.Objects;

/**
 * An application instance as a person reads it: which application, on which host, which process.
 *
 * @param application {@code spring.application.name}, or {@code "application"} when it is not set
 * @param host the host name
 * @param pid the process id
 */
public record LockInstance(String application, String host, long pid) {

    /** Checks that the names are there. */
    public LockInstance {
        Objects.requireNonNull(application, "application");
        Objects.requireNonNull(host, "host");
    }

    /** The current process, under {@code application}. */
    public static LockInstance current(String application) {
        return new LockInstance(application, hostName(), ProcessHandle.current().pid());
    }

    /**
     * The host name without a DNS lookup (which can hang for seconds where DNS is slow): {@code HOSTNAME}, else
     * {@code COMPUTERNAME}, else the local host's name as the JDK knows it.
     */
    private static String hostName() {
        String name = System.getenv("HOSTNAME");
        if (name == null || name.isBlank()) {
            name = System.getenv("COMPUTERNAME");
        }
        if (name == null || name.isBlank()) {
            try {
                name = java.net.InetAddress.getLocalHost().getHostName();
            }
            catch (java.io.IOException ex) {
                name = "unknown-host";
            }
        }
        return name;
    }

    @Override
    public String toString() {
        return application + " on " + host + " (pid " + pid + ")";
    }
}
