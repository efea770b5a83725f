package io.github.distlock.etcd;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import com.google.protobuf.ByteString;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Who holds, read from the entries as the acquisitions decide it (no server: the entries are made here): a reader
 * holds unless a writer entry is older; any other entry only when it is the oldest of all.
 */
class EtcdHoldersByTheRecipesRulesTest {

    private static final String PREFIX = "distlock/k/";

    /** Entries named under the prefix, created in this order. */
    private static List<KeyValue> entries(String... names) {
        List<KeyValue> entries = new ArrayList<>();
        for (int i = 0; i < names.length; i++) {
            entries.add(new KeyValue(io.etcd.jetcd.api.KeyValue.newBuilder()
                    .setKey(ByteString.copyFromUtf8(PREFIX + names[i])).setCreateRevision(10 + i).build(),
                    ByteSequence.EMPTY));
        }
        return entries;
    }

    private static List<String> holding(String... names) {
        return EtcdLockInspector.holding(entries(names), PREFIX).stream()
                .map(entry -> entry.getKey().toString(StandardCharsets.UTF_8).substring(PREFIX.length())).toList();
    }

    @Test
    void readersBeforeTheFirstWriterHoldAndNobodyBehindIt() {
        assertThat(holding("r/a-1", "r/b-2", "w/c-3", "r/d-4")).containsExactly("r/a-1", "r/b-2");
        assertThat(holding("w/a-1", "r/b-2", "w/c-3")).containsExactly("w/a-1");
        assertThat(holding()).isEmpty();
    }

    /** An etcd mutex's entry (named by its lease) excludes writers, as etcd's recipe does, but readers wait only for writers. */
    @Test
    void anotherClientsEntryHoldsWhenOldestAndBlocksNoReader() {
        assertThat(holding("694d7a1b2c", "r/b-2", "w/c-3")).containsExactly("694d7a1b2c", "r/b-2");
        assertThat(holding("r/a-1", "694d7a1b2c", "r/c-3")).containsExactly("r/a-1", "r/c-3");
    }

    /** The owner in an entry's name is hex; the client id (a UUID) has dashes of its own. */
    @Test
    void anEntryNameOfOursGivesItsClientAndOwner() {
        EtcdLockInspector.EntryName name = EtcdLockInspector.EntryName.parse(
                "w/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-" + Long.toHexString(4503599627370525L));
        assertThat(name).isEqualTo(new EtcdLockInspector.EntryName("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
                4503599627370525L));
        assertThat(EtcdLockInspector.EntryName.parse("694d7a1b2c")).as("an etcd mutex's entry").isNull();
        assertThat(EtcdLockInspector.EntryName.parse("w/client-notHex")).isNull();
    }
}
