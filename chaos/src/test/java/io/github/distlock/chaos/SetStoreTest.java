package io.github.distlock.chaos;

import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The store's fencing, on the interleaving that makes a read-modify-write unsafe: a holder whose lease ran out (token
 * 5) reads, the next holder (token 6) reads, the stale holder writes first, then the next holder writes.
 */
class SetStoreTest {

    @Test
    void checkingReadsAsWellAsWritesRefusesTheStaleHoldersWrite() {
        try (SetStore store = new SetStore(SetStore.Fencing.FULL)) {
            assertThat(store.read("k", 5)).isEqualTo("V ");
            assertThat(store.read("k", 6)).isEqualTo("V ");
            assertThat(store.write("k", 5, "stale", List.of("stale"))).isEqualTo("X");
            assertThat(store.write("k", 6, "next", List.of("next"))).startsWith("OK");
            assertThat(store.elements("k")).containsExactly("next");
            assertThat(store.read("k", 5)).as("a read below the highest token seen").isEqualTo("X");
        }
    }

    @Test
    void checkingWritesOnlyLetsTheStaleHolderWriteFirstAndItsUpdateIsLost() {
        try (SetStore store = new SetStore(SetStore.Fencing.WRITES)) {
            store.read("k", 5);
            store.read("k", 6);
            assertThat(store.write("k", 5, "stale", List.of("stale"))).as("the stale write, acknowledged").startsWith("OK");
            assertThat(store.write("k", 6, "next", List.of("next"))).startsWith("OK");
            assertThat(store.elements("k")).as("the acknowledged stale element is gone").containsExactly("next");
        }
    }

    @Test
    void unfencedRequestsAreAlwaysServed() {
        try (SetStore store = new SetStore(SetStore.Fencing.FULL)) {
            store.write("k", -1, "a", List.of("a"));
            assertThat(store.write("k", -1, "b", List.of("b"))).startsWith("OK");
            assertThat(store.acceptedWrites()).hasSize(2);
        }
    }
}
