package io.github.distlock.etcd;

import java.time.Duration;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.github.distlock.testsupport.EtcdServer;

/** Clients and inspection of a test etcd. */
final class EtcdTesting {

    /**
     * The session lease's TTL: how long a dead holder's watchdog lock lives on. Short, because the suite waits for it;
     * long enough that a loaded 2-core machine renews it in time (a loss is reported after two thirds of it unrenewed).
     */
    static final Duration WATCHDOG = Duration.ofSeconds(3);

    private EtcdTesting() {
    }

    /** A test class's etcd server and its client; both {@code null} when etcd is skipped on this machine. */
    record Running(EtcdServer server, Client client) {

        /** Starts a server (unless skipped) and connects a client to it. */
        static Running start() {
            EtcdServer server = EtcdServer.startUnlessSkipped();
            return new Running(server, (server != null) ? connect(server.endpoint()) : null);
        }

        /** Closes the client, then stops the server, even when closing the client fails. */
        void stop() {
            try {
                if (client != null) {
                    client.close();
                }
            }
            finally {
                if (server != null) {
                    server.close();
                }
            }
        }
    }

    static Client connect(String endpoint) {
        return Client.builder().endpoints(endpoint).build();
    }

    /** The entries under a lock prefix, oldest first, as etcd has them now. */
    static java.util.List<KeyValue> entries(Client client, String prefix) {
        return client.getKVClient().get(ByteSequence.from(prefix, java.nio.charset.StandardCharsets.UTF_8),
                GetOption.builder().isPrefix(true).withSortField(GetOption.SortTarget.CREATE)
                        .withSortOrder(GetOption.SortOrder.ASCEND).build()).join().getKvs();
    }

    static String text(ByteSequence bytes) {
        return bytes.toString(java.nio.charset.StandardCharsets.UTF_8);
    }
}
