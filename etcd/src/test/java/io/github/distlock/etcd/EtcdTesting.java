package io.github.distlock.etcd;

import java.time.Duration;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;

/** Clients and inspection of a test etcd. */
final class EtcdTesting {

    /**
     * The session lease's TTL: how long a dead holder's watchdog lock lives on. Short, because the suite waits for it;
     * long enough that a loaded 2-core machine renews it in time (a loss is reported after two thirds of it unrenewed).
     */
    static final Duration WATCHDOG = Duration.ofSeconds(3);

    private EtcdTesting() {
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
