package io.github.distlock.etcd;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import io.github.distlock.testsupport.TcpProxy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The etcd backend leaves no stray entry and no second holder when an entry disappears under a waiter, when an answer
 * from etcd is lost after etcd carried the request out, and when the provider is closed under its holders.
 */
@Timeout(120)
class EtcdLeavesNoStrayEntryAndNoSecondHolderTest extends EtcdServerTestBase {

    private static final String NAMESPACE = "distlock-interleavings/";
    private static final Duration SLACK = Duration.ofSeconds(10);
    /**
     * The TTL of the side behind the proxy: long enough that its session lease survives a pause, a dropped connection
     * and gRPC's reconnection (seconds) without being reported lost, and longer than the tests wait for an entry to go,
     * so that its expiry cannot be what removes it.
     */
    private static final Duration LONG_TTL = Duration.ofSeconds(15);

    @Override
    String namespace() {
        return NAMESPACE;
    }

    private static LockRequest request(String key, Duration wait) {
        return new LockRequest(key, wait.toNanos(), 0, false, LockType.REENTRANT, LockOwner.next());
    }

    private static LockHandle acquire(EtcdLockProvider provider, LockRequest request) throws Exception {
        return provider.acquire(request).get(Duration.ofNanos(request.waitNanos()).plus(SLACK).toMillis(),
                TimeUnit.MILLISECONDS);
    }

    private LockHandle tryOnce(String key) throws Exception {
        return acquire(provider, request(key, Duration.ZERO));
    }

    private List<String> entries(String key) {
        return EtcdTesting.entries(client, provider.lockPrefix(key)).stream().map(kv -> EtcdTesting.text(kv.getKey())).toList();
    }

    /** The outcome of a future: its value, or its failure's cause. */
    private static Object outcome(CompletableFuture<LockHandle> future) throws Exception {
        try {
            return future.get(SLACK.toMillis(), TimeUnit.MILLISECONDS);
        }
        catch (ExecutionException ex) {
            return ex.getCause();
        }
    }

    /**
     * Two holders: a waiter whose own entry is gone (its lease revoked or expired on the server before its provider
     * noticed, or the key deleted) must not take the lock when the entries before it go, since a newcomer queued
     * after that finds no entry ahead of its own and takes it too. (etcd's own {@code concurrency.Mutex} checks its
     * key is still there after waiting, for this reason; the ZooKeeper provider checks its node is in the listing.)
     */
    @Test
    void aWaiterWhoseEntryVanishedDoesNotTakeTheLockANewcomerHolds() throws Exception {
        LockHandle holder = tryOnce("vanished");
        CompletableFuture<LockHandle> waiter = provider.acquire(request("vanished", Duration.ofSeconds(30)));
        await().atMost(SLACK).until(() -> entries("vanished").size() == 2);
        String waitersEntry = entries("vanished").get(1);
        client.getKVClient().delete(ByteSequence.from(waitersEntry, StandardCharsets.UTF_8)).join();

        assertThat(holder.release()).isTrue();
        Object waited = outcome(waiter);
        LockHandle newcomer = tryOnce("vanished");
        try {
            assertThat(newcomer).as("a newcomer once the holder released").isNotNull();
            assertThat(waited).as("the waiter whose entry vanished, while the newcomer holds the lock")
                    .isInstanceOf(IllegalStateException.class);
            assertThat(((Throwable) waited).getMessage()).contains("'vanished'").contains("vanished while waiting");
        }
        finally {
            if (waited instanceof LockHandle handle) {
                handle.release();
            }
            if (newcomer != null) {
                newcomer.release();
            }
        }
    }

    /**
     * Stuck lock: etcd creates a waiter's entry, but the answer is lost with the connection. The acquisition fails,
     * and the entry it never learned about must not stay: it is on the session lease, which this provider renews as
     * long as it lives, so the entry would hold the lock (once first in the queue) for everyone, for good.
     */
    @Test
    void anEntryWhoseCreationsAnswerWasLostIsDeleted() throws Exception {
        TcpProxy proxy = closeLater(TcpProxy.start(server.clientPort()));
        Client sideClient = closeLater(EtcdTesting.connect("http://127.0.0.1:" + proxy.port()));
        EtcdLockProvider side = closeLater(new EtcdLockProvider(sideClient, NAMESPACE, LONG_TTL));
        assertThat(acquire(side, request("ghost-warm-up", Duration.ZERO)).release()).isTrue(); // the session lease exists

        proxy.holdReplies();
        CompletableFuture<LockHandle> acquisition = side.acquire(request("ghost", Duration.ofSeconds(30)));
        await().atMost(SLACK).until(() -> entries("ghost").size() == 1);
        proxy.dropConnections();
        assertThat(outcome(acquisition)).as("the acquisition whose answer was lost").isInstanceOf(Throwable.class);

        // less than the side's TTL: its session lease lives on (renewed), and with it an entry left behind
        await().atMost(SLACK).until(() -> entries("ghost").isEmpty());
        LockHandle other = tryOnce("ghost");
        assertThat(other).as("the lock for someone else").isNotNull();
        assertThat(other.release()).isTrue();
    }

    /**
     * Stuck lock: a waiter gives up while etcd is unreachable for a moment; its entry's deletion fails. The entry is on
     * the renewed session lease, so once the holder releases, it would hold the lock for everyone, for good.
     */
    @Test
    void aWaiterThatGivesUpDuringABlipLeavesNoEntryBehind() throws Exception {
        LockHandle holder = tryOnce("blip");
        TcpProxy proxy = closeLater(TcpProxy.start(server.clientPort()));
        Client sideClient = closeLater(EtcdTesting.connect("http://127.0.0.1:" + proxy.port()));
        EtcdLockProvider side = closeLater(new EtcdLockProvider(sideClient, NAMESPACE, LONG_TTL));
        Duration wait = Duration.ofSeconds(2);
        long start = System.nanoTime();
        CompletableFuture<LockHandle> waiter = side.acquire(request("blip", wait));
        await().atMost(SLACK).until(() -> entries("blip").size() == 2);

        proxy.pause();
        // the wait ends while etcd is unreachable: the waiter's deletion goes into the paused connection
        await().atMost(SLACK).until(() -> System.nanoTime() - start > wait.plusMillis(300).toNanos());
        proxy.dropConnections();
        proxy.resume();
        // "not acquired", or on a loaded machine the failure of a check the dropped connection cut: never a lock
        Object gaveUp = outcome(waiter);
        assertThat(gaveUp == null || gaveUp instanceof Throwable).as("the waiter that gave up: %s", gaveUp).isTrue();

        assertThat(holder.release()).isTrue();
        await().atMost(SLACK).until(() -> entries("blip").isEmpty());
        LockHandle other = tryOnce("blip");
        assertThat(other).as("the lock for someone else once the holder released").isNotNull();
        assertThat(other.release()).isTrue();
    }

    /**
     * Two holders, one not told: closing a provider revokes its session lease, which frees the locks its holders may
     * still be running under (an application shutting down while a locked method runs). They must be told.
     */
    @Test
    void closingTheProviderTellsItsHoldersTheirLocksAreGone() throws Exception {
        EtcdLockProvider closing = closeLater(new EtcdLockProvider(client, NAMESPACE, EtcdTesting.WATCHDOG));
        LockHandle holder = acquire(closing, request("closing", Duration.ZERO));
        List<String> losses = new CopyOnWriteArrayList<>();
        holder.whenLost(losses::add);

        closing.close();
        LockHandle other = tryOnce("closing");
        assertThat(other).as("the lock once its holder's provider closed").isNotNull();
        assertThat(other.release()).isTrue();
        await().atMost(SLACK).until(() -> !losses.isEmpty());
        assertThat(losses).hasSize(1);
        assertThat(losses.get(0)).contains("'closing'").contains("closed");
        assertThat(holder.lostWhileHeld()).isTrue();
    }

    /** A waiter's future cancelled while its entry's creation is on its way leaves no entry. */
    @Test
    void aWaiterCancelledWhileItsEntryIsBeingCreatedLeavesNone() throws Exception {
        LockHandle holder = tryOnce("cancel-in-flight");
        for (int i = 0; i < 20; i++) {
            CompletableFuture<LockHandle> waiter = provider.acquire(request("cancel-in-flight", Duration.ofSeconds(30)));
            waiter.cancel(false);
        }
        await().during(Duration.ofSeconds(1)).atMost(SLACK).until(() -> entries("cancel-in-flight").size() == 1);
        assertThat(holder.release()).isTrue();
        assertThat(entries("cancel-in-flight")).isEmpty();
    }

    /** Keys that differ only in an unpaired surrogate would share one lock (UTF-8 writes each as '?'): refused. */
    @Test
    void aKeyWithAnUnpairedSurrogateIsRefused() {
        assertThatThrownBy(() -> EtcdLockProvider.encode("a\uD800")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unpaired surrogate");
        assertThat(EtcdLockProvider.encode("a\uD83D\uDE00/b")).isEqualTo("a\uD83D\uDE00%2Fb");
    }
}
