package io.github.distlock.etcd;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.lock.LockResponse;
import io.etcd.jetcd.options.LeaseOption;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.EtcdServer;
import io.github.distlock.testsupport.TcpProxy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.opentest4j.TestAbortedException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** Leases, losses and entries of the etcd locks, looked at in etcd itself. */
@Timeout(120)
class EtcdLeaseAndEntriesTest extends EtcdServerTestBase {

    private static final String NAMESPACE = "distlock-leases/";
    private static final Duration SLACK = Duration.ofSeconds(10);

    @Override
    String namespace() {
        return NAMESPACE;
    }

    private static LockRequest request(String key, Duration wait, Duration lease, LockType type, boolean fenced) {
        return new LockRequest(key, wait.toNanos(), lease.toNanos(), fenced, type, LockOwner.next());
    }

    private static LockHandle acquire(EtcdLockProvider provider, LockRequest request) throws Exception {
        return provider.acquire(request).get(Duration.ofNanos(request.waitNanos()).plus(SLACK).toMillis(),
                TimeUnit.MILLISECONDS);
    }

    private LockHandle tryOnce(String key) throws Exception {
        return acquire(provider, request(key, Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false));
    }

    private List<String> entries(String key) {
        return EtcdTesting.entries(client, provider.lockPrefix(key)).stream().map(kv -> EtcdTesting.text(kv.getKey())).toList();
    }

    private static List<String> recordLosses(LockHandle handle) {
        List<String> losses = new CopyOnWriteArrayList<>();
        handle.whenLost(losses::add);
        return losses;
    }

    /**
     * A network partition: the holder cannot renew its lease. It is told (after two thirds of the TTL without a
     * renewal, before the lease can have expired and anyone else can have the lock), once; the lock goes to the next
     * owner when the lease expires; when the partition heals, the stale holder's release answers false and leaves the
     * next holder's entry alone.
     */
    @Test
    void aHolderThatCannotRenewIsToldOnceBeforeAnyoneElseGetsTheLockAndItsReleaseLeavesTheNextHolderAlone() throws Exception {
        TcpProxy proxy = closeLater(TcpProxy.start(server.clientPort()));
        Client holderClient = closeLater(EtcdTesting.connect("http://127.0.0.1:" + proxy.port()));
        EtcdLockProvider holderSide = closeLater(new EtcdLockProvider(holderClient, NAMESPACE, EtcdTesting.WATCHDOG));
        LockHandle holder = acquire(holderSide, request("cut", Duration.ZERO, Duration.ZERO, LockType.REENTRANT, false));
        List<String> losses = recordLosses(holder);

        proxy.pause();
        long cut = System.nanoTime();
        assertThat(tryOnce("cut")).as("the lock right after the cut").isNull();
        CompletableFuture<LockHandle> next = provider.acquire(request("cut", EtcdTesting.WATCHDOG.plus(SLACK), Duration.ZERO,
                LockType.REENTRANT, false));
        await().atMost(EtcdTesting.WATCHDOG.plus(SLACK)).until(() -> !losses.isEmpty());
        long told = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cut);
        assertThat(next).as("the next owner, when the holder is told").isNotDone();
        assertThat(losses.get(0)).contains("'cut'").contains("was not renewed for");
        assertThat(holder.lostWhileHeld()).isTrue();

        LockHandle nextHolder = next.get(EtcdTesting.WATCHDOG.plus(SLACK).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(nextHolder).as("the next owner, once the holder's lease expired").isNotNull();
        System.out.println("MEASURED etcd partition: holder told " + told + " ms after the cut, next owner had the lock "
                + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cut) + " ms after it (lease TTL "
                + EtcdTesting.WATCHDOG.toMillis() + " ms)");
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cut)).as("lock free after the cut")
                .isGreaterThanOrEqualTo(EtcdTesting.WATCHDOG.toMillis() * 2 / 3);
        proxy.resume();
        assertThat(holder.release()).as("the stale holder's release").isFalse();
        assertThat(entries("cut")).as("entries after the stale release")
                .containsExactly(((EtcdLockHandle) nextHolder).entryKey());
        assertThat(tryOnce("cut")).as("a newcomer while the next holder holds").isNull();
        assertThat(nextHolder.release()).isTrue();
        assertThat(entries("cut")).isEmpty();
        assertThat(losses).as("loss reports").hasSize(1);
    }

    /** A waiter whose lease is lost fails (its entry expires with the lease) and leaves nothing in the queue. */
    @Test
    void aWaiterWhoseLeaseIsLostFailsAndLeavesNoEntry() throws Exception {
        LockHandle holder = tryOnce("waited");
        TcpProxy proxy = closeLater(TcpProxy.start(server.clientPort()));
        Client waiterClient = closeLater(EtcdTesting.connect("http://127.0.0.1:" + proxy.port()));
        EtcdLockProvider waiterSide = closeLater(new EtcdLockProvider(waiterClient, NAMESPACE, EtcdTesting.WATCHDOG));
        CompletableFuture<LockHandle> waiter = waiterSide.acquire(request("waited", Duration.ofSeconds(60), Duration.ZERO,
                LockType.REENTRANT, false));
        await().atMost(SLACK).until(() -> entries("waited").size() == 2);

        proxy.pause();
        assertThatThrownBy(() -> waiter.get(EtcdTesting.WATCHDOG.plus(SLACK).toMillis(), TimeUnit.MILLISECONDS))
                .isInstanceOf(ExecutionException.class).cause().isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'waited'").hasMessageContaining("was lost while waiting");
        await().atMost(EtcdTesting.WATCHDOG.plus(SLACK))
                .until(() -> entries("waited").equals(List.of(((EtcdLockHandle) holder).entryKey())));
        proxy.resume();
        assertThat(holder.release()).isTrue();
    }

    /**
     * The case a token taken from the entry's create revision gets wrong: a fenced waiter queued before the holder
     * issued itself a token must get a higher one, since it holds after it.
     */
    @Test
    void aWaiterQueuedBeforeTheHoldersNewTokenGetsAHigherOne() throws Exception {
        LockHandle holder = tryOnce("fence");
        CompletableFuture<LockHandle> waiter = provider.acquire(request("fence", Duration.ofSeconds(30), Duration.ZERO,
                LockType.WRITE, true));
        await().atMost(SLACK).until(() -> entries("fence").size() == 2);
        KeyValue waiterEntry = EtcdTesting.entries(client, provider.lockPrefix("fence")).get(1);
        long holdersToken = holder.newFencingToken();
        assertThat(holdersToken).isGreaterThan(waiterEntry.getCreateRevision());
        assertThat(holder.release()).isTrue();
        LockHandle next = waiter.get(SLACK.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).as("the waiter's token, once it holds").isGreaterThan(holdersToken);
        assertThat(next.release()).isTrue();
    }

    /** A waiter that gives up, or is cancelled, deletes its entry; a try on a held lock writes nothing. */
    @Test
    void waitersThatGiveUpLeaveNoEntryAndATryWritesNothing() throws Exception {
        LockHandle holder = acquire(provider, request("queue", Duration.ZERO, Duration.ZERO, LockType.FAIR, false));
        assertThat(acquire(provider, request("queue", Duration.ofMillis(200), Duration.ZERO, LockType.FAIR, false))).isNull();
        assertThat(entries("queue")).as("entries after a waiter gave up").hasSize(1);
        CompletableFuture<LockHandle> cancelled = provider.acquire(request("queue", Duration.ofSeconds(30), Duration.ZERO,
                LockType.FAIR, false));
        await().atMost(SLACK).until(() -> entries("queue").size() == 2);
        cancelled.cancel(true);
        await().atMost(SLACK).until(() -> entries("queue").size() == 1);

        long before = revision();
        assertThat(tryOnce("queue")).isNull();
        assertThat(revision()).as("etcd's revision after a try on a held lock").isEqualTo(before);
        assertThat(holder.release()).isTrue();
        assertThat(entries("queue")).isEmpty();
    }

    private static long revision() {
        return client.getKVClient().get(ByteSequence.from("-", StandardCharsets.UTF_8)).join().getHeader().getRevision();
    }

    /**
     * A fixed lease: its entry gets a lease of its own, its TTL rounded up to whole seconds (so a dead holder's lock
     * lives at least as long as asked); a live holder's entry is deleted by the provider at the lease's end, to the
     * millisecond, without a loss report.
     */
    @Test
    void aFixedLeaseHasAWholeSecondTtlAndEndsOnTime() throws Exception {
        Duration lease = Duration.ofMillis(1200);
        long start = System.nanoTime();
        LockHandle holder = acquire(provider, request("lease", Duration.ZERO, lease, LockType.REENTRANT, false));
        List<String> losses = recordLosses(holder);
        KeyValue entry = EtcdTesting.entries(client, provider.lockPrefix("lease")).get(0);
        long granted = client.getLeaseClient().timeToLive(entry.getLease(), LeaseOption.DEFAULT).join().getGrantedTTL();
        assertThat(granted).as("TTL of the entry's lease, seconds").isEqualTo(2);
        await().atMost(lease.plus(SLACK)).pollInterval(Duration.ofMillis(20)).until(() -> entries("lease").isEmpty());
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isGreaterThanOrEqualTo(lease.toMillis());
        assertThat(holder.stillHeld()).isFalse();
        assertThat(holder.release()).isFalse();
        // Ended by the provider, not by etcd's lease: the holder watches its entry, and an entry deleted while the
        // provider still counted it held would be reported lost (as it is when the provider's lease end is removed)
        await().during(Duration.ofMillis(500)).atMost(SLACK).until(() -> losses.isEmpty() && !holder.lostWhileHeld());
        await().atMost(SLACK).until(() -> client.getLeaseClient().timeToLive(entry.getLease(), LeaseOption.DEFAULT).join()
                .getTTL() == -1);
    }

    /** etcd's own lock service on the lock's prefix (what {@code etcdctl lock} does) and ours exclude each other. */
    @Test
    void etcdsOwnLockOnThePrefixExcludesAndIsExcluded() throws Exception {
        String prefix = provider.lockPrefix("shared");
        ByteSequence name = ByteSequence.from(prefix.substring(0, prefix.length() - 1), StandardCharsets.UTF_8);
        long lease = client.getLeaseClient().grant(30).join().getID();
        try {
            LockHandle ours = tryOnce("shared");
            CompletableFuture<LockResponse> theirs = client.getLockClient().lock(name, lease);
            await().during(Duration.ofMillis(500)).atMost(SLACK).until(() -> !theirs.isDone());
            assertThat(ours.release()).isTrue();
            LockResponse locked = theirs.get(SLACK.toMillis(), TimeUnit.MILLISECONDS);
            assertThat(tryOnce("shared")).as("ours while etcd's lock is held").isNull();
            client.getLockClient().unlock(locked.getKey()).join();
            LockHandle again = tryOnce("shared");
            assertThat(again).isNotNull();
            assertThat(again.release()).isTrue();
        }
        finally {
            client.getLeaseClient().revoke(lease).join();
        }
    }

    /** Keys with slashes get a prefix of their own: "a" never waits for "a/b". */
    @Test
    void keysWithSlashesDoNotShareAPrefix() throws Exception {
        LockHandle nested = tryOnce("a/b");
        LockHandle outer = tryOnce("a");
        assertThat(outer).as("'a' while 'a/b' is held").isNotNull();
        assertThat(provider.lockPrefix("a/b")).isEqualTo(NAMESPACE + "a%2Fb/");
        assertThat(outer.release()).isTrue();
        assertThat(nested.release()).isTrue();
    }

    /** Without an etcd binary the tests fail saying how to get one, unless the switch makes them skip. */
    @Test
    void aMissingBinaryFailsWithHowToInstallItOrSkipsWithTheSwitch() {
        Map<String, String> noEtcd = Map.of("PATH", "/nonexistent");
        assertThatThrownBy(() -> EtcdServer.binary(noEtcd, new Properties())).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("apt-get install etcd-server").hasMessageContaining("DISTLOCK_ETCD_SERVER")
                .hasMessageContaining("-Ddistlock.etcd.skip-if-missing=true");
        Properties skip = new Properties();
        skip.setProperty("distlock.etcd.skip-if-missing", "true");
        assertThatThrownBy(() -> EtcdServer.binary(noEtcd, skip)).isInstanceOf(TestAbortedException.class);
        assertThatThrownBy(() -> EtcdServer.binary(Map.of("PATH", "/nonexistent", "DISTLOCK_ETCD_SKIP_IF_MISSING", "true"),
                new Properties())).isInstanceOf(TestAbortedException.class);
        assertThatThrownBy(() -> EtcdServer.binary(Map.of("DISTLOCK_ETCD_SERVER", "/nonexistent/etcd"), new Properties()))
                .hasMessageContaining("DISTLOCK_ETCD_SERVER=/nonexistent/etcd is not an executable file");
        assertThat(EtcdServer.binary(Map.of("DISTLOCK_ETCD_SERVER", EtcdServer.binary().toString()), new Properties()))
                .isEqualTo(EtcdServer.binary());
        assertThat(EtcdServer.binary()).isInstanceOf(Path.class);
    }
}
