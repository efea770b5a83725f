package io.github.distlock.chaos;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * A backend on its servers, as a chaos run uses it: which server ports a client reaches (each client gets a proxy of
 * its own in front of each, so that one client can be cut off), the client's properties, and the faults its servers
 * can be put through.
 */
interface Topology extends AutoCloseable {

    /** The distlock backend: redis, jdbc, zookeeper, etcd. */
    String backend();

    /** The servers' arrangement: sentinel, cluster, ensemble, single. */
    String name();

    /** Every server port a client connects to. */
    List<Integer> clientPorts();

    /** The client application's properties, given the client's proxy port for each server port. */
    List<String> clientProperties(Map<Integer, Integer> proxyPorts);

    /** The faults of the servers, applied one at a time. */
    List<ServerFault> serverFaults();

    /** Waits until every server is back and the topology serves (a leader, a master, a quorum). */
    void awaitServing(Duration timeout);

    @Override
    void close();

    /** A fault of the servers: {@link #inject()} applies it and returns what heals it. */
    interface ServerFault {

        String kind();

        /** Applies the fault now; the returned action heals it (restarts what was killed, waits for a new master). */
        Runnable inject();
    }

    static ServerFault fault(String kind, java.util.function.Supplier<Runnable> inject) {
        return new ServerFault() {
            @Override
            public String kind() {
                return kind;
            }

            @Override
            public Runnable inject() {
                return inject.get();
            }
        };
    }
}
