package io.github.distlock.etcd;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.TcpProxy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** What an operator sees of the etcd locks (health, holders, announcements, closed keys), looked at in etcd itself. */
@Timeout(60)
class EtcdOperationsTest extends EtcdServerTestBase {

    private static final String NAMESPACE = "distlock-operations/";
    private static final Duration SLACK = Duration.ofSeconds(10);

    @Override
    String namespace() {
        return NAMESPACE;
    }

    private static LockRequest request(String key, Duration wait, LockType type) {
        return new LockRequest(key, wait.toNanos(), 0, false, type, LockOwner.next());
    }

    private static LockHandle acquire(EtcdLockProvider provider, LockRequest request) throws Exception {
        return provider.acquire(request).get(Duration.ofNanos(request.waitNanos()).plus(SLACK).toMillis(),
                TimeUnit.MILLISECONDS);
    }

    private static List<KeyValue> at(String key) {
        return client.getKVClient().get(ByteSequence.from(key, StandardCharsets.UTF_8)).join().getKvs();
    }

    private static long revision() {
        return client.getKVClient().get(ByteSequence.from("-", StandardCharsets.UTF_8)).join().getHeader().getRevision();
    }

    /**
     * The health indicator's question: a stalled etcd (connections open, no answer) gets {@code false} within the
     * timeout asked, not after gRPC's own timeouts, and {@code true} again once it answers.
     */
    @Test
    void pingIsFalseWithinItsTimeoutWhileEtcdDoesNotAnswerAndTrueAfter() throws Exception {
        TcpProxy proxy = closeLater(TcpProxy.start(server.clientPort()));
        Client stalled = closeLater(EtcdTesting.connect("http://127.0.0.1:" + proxy.port()));
        EtcdLockProvider behindProxy = closeLater(new EtcdLockProvider(stalled, NAMESPACE, EtcdTesting.WATCHDOG));
        assertThat(behindProxy.ping(Duration.ofSeconds(5))).as("ping while etcd answers").isTrue();
        proxy.pause();
        long start = System.nanoTime();
        assertThat(behindProxy.ping(Duration.ofMillis(500))).as("ping while etcd is stalled").isFalse();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("how long the stalled ping took")
                .isLessThan(Duration.ofMillis(1500));
        proxy.resume();
        await().atMost(SLACK).until(() -> behindProxy.ping(Duration.ofSeconds(1)));
    }

    /**
     * An instance is announced beside the locks, on its session lease: another provider names it, and it goes when
     * the provider closes (which revokes the lease), as it would when the instance died (the lease expires).
     */
    @Test
    void anAnnouncedInstanceNamesItsHoldersUntilItsSessionLeaseGoes() throws Exception {
        EtcdLockProvider other = closeLater(new EtcdLockProvider(client, NAMESPACE, EtcdTesting.WATCHDOG));
        LockInstance self = new LockInstance("shop & co", "host-1", 42);
        other.announce(self);
        String announcement = other.instanceKey();
        assertThat(announcement).startsWith(NAMESPACE + "%instances/");
        await().atMost(SLACK).until(() -> !at(announcement).isEmpty());
        LockRequest request = request("announced", Duration.ZERO, LockType.WRITE);
        LockHandle held = acquire(other, request);
        String owner = other.ownerName(request.owner().id());
        List<LockHolderInfo> holders = provider.holders("announced");
        assertThat(holders).hasSize(1);
        assertThat(holders.get(0)).extracting(LockHolderInfo::key, LockHolderInfo::owner, LockHolderInfo::instanceId,
                LockHolderInfo::instance, LockHolderInfo::mode)
                .containsExactly("announced", owner, owner.substring(0, owner.indexOf(':')), self, "write");
        assertThat(owner).endsWith(":" + request.owner().id());
        assertThat(holders.get(0).remaining()).as("the session lease's time left")
                .isPositive().isLessThanOrEqualTo(EtcdTesting.WATCHDOG);
        assertThat(at(announcement).get(0).getLease()).as("on the session lease of the holder's watchdog lock")
                .isEqualTo(EtcdTesting.entries(client, provider.lockPrefix("announced")).get(0).getLease());
        held.release();
        other.close();
        assertThat(at(announcement)).as("after its provider closed").isEmpty();
    }

    /**
     * An etcd mutex on the lock's prefix ({@code etcdctl lock}) is a holder too, named by its key under the prefix,
     * without an instance; a force release deletes it.
     */
    @Test
    void anotherClientsEntryOnThePrefixIsListedByItsName() {
        String prefix = provider.lockPrefix("foreign");
        long lease = client.getLeaseClient().grant(30).join().getID();
        try {
            String entry = client.getLockClient().lock(ByteSequence.from(prefix.substring(0, prefix.length() - 1),
                    StandardCharsets.UTF_8), lease).join().getKey().toString(StandardCharsets.UTF_8);
            List<LockHolderInfo> holders = provider.holders("foreign");
            assertThat(holders).hasSize(1);
            assertThat(holders.get(0).owner()).isEqualTo(entry.substring(prefix.length()));
            assertThat(holders.get(0).instanceId()).isNull();
            assertThat(holders.get(0).mode()).isEqualTo("exclusive");
            assertThat(provider.forceRelease("foreign")).isEqualTo(holders);
            assertThat(at(entry)).isEmpty();
        }
        finally {
            client.getLeaseClient().revoke(lease).join();
        }
    }

    /**
     * A closed key's marker is apart from the lock's entries and holds the reason; every acquisition fails closed,
     * whether the key is free for it (a reader beside a reader) or taken (a writer), trying once or ready to wait,
     * without writing anything (the marker is checked in the transaction that would create its entry); the holder
     * releases as usual; reopened, the key locks.
     */
    @Test
    void aClosedKeyKeepsItsReasonApartFromTheLockAndRefusesEveryTry() throws Exception {
        LockHandle reader = acquire(provider, request("closing", Duration.ZERO, LockType.READ));
        assertThat(provider.closeKey("closing", "sold out")).as("waiters told").isZero();
        assertThat(provider.closedMarker("closing")).isEqualTo(NAMESPACE + "%closed/closing");
        assertThat(at(provider.closedMarker("closing"))).extracting(kv -> EtcdTesting.text(kv.getValue()))
                .containsExactly("sold out");
        long before = revision();
        for (Duration wait : List.of(Duration.ZERO, Duration.ofSeconds(30))) {
            for (LockType type : List.of(LockType.READ, LockType.WRITE)) {
                assertThatThrownBy(() -> acquire(provider, request("closing", wait, type)))
                        .as("a %s waiting %s", type, wait).hasRootCauseInstanceOf(LockKeyClosedException.class)
                        .rootCause().hasMessage("Lock 'closing' is closed: sold out");
            }
        }
        assertThat(revision()).as("etcd's revision after the refused tries: nothing written").isEqualTo(before);
        assertThat(reader.release()).as("the holder's release while closed").isTrue();
        provider.reopenKey("closing");
        assertThat(at(provider.closedMarker("closing"))).isEmpty();
        LockHandle again = acquire(provider, request("closing", Duration.ZERO, LockType.WRITE));
        assertThat(again).isNotNull();
        assertThat(again.release()).isTrue();
    }
}
