package io.github.distlock.topology;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import io.github.distlock.LockContext;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.testsupport.RedisCluster;
import io.github.distlock.testsupport.RedisClusterExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * An application configured only through {@code spring.data.redis.cluster.nodes}, on a real cluster of 3 masters and 3
 * replicas (one cluster for the class: nothing here kills a node). Where a lock lives is checked on the servers
 * themselves, node by node, through test-support's {@link RespClient}, never through the client under test.
 */
class ClusterLockingTest {

    private static final Duration WATCHDOG = Duration.ofSeconds(10);

    @RegisterExtension
    static final RedisClusterExtension redis = new RedisClusterExtension();

    private static RedisView view;

    @BeforeAll
    static void look() {
        view = RedisView.of(redis.cluster());
    }

    @AfterAll
    static void stopLooking() {
        view.close();
    }

    @Test
    void keysOfSlotsAllOverTheClusterAreLockedOnTheMasterThatOwnsTheirSlot() throws Throwable {
        // every 16th slot and both ends of each master's range: 1,024+ keys, each master gets its share (every slot
        // would take 16 times as long on a loaded 2-core CI machine for no more insight: slots are hashed one way)
        List<Integer> slots = IntStream.range(0, RedisCluster.SLOTS)
                .filter(slot -> slot % 16 == 0 || slot == 5460 || slot == 5461 || slot == 10922 || slot == 10923
                        || slot == 16383)
                .boxed().toList();
        Map<Integer, String> keyOfSlot = keysFor(slots);
        Map<Integer, AtomicInteger> checkedPerMaster = new ConcurrentHashMap<>();
        Queue<String> wrong = new ConcurrentLinkedQueue<>();

        Apps.cluster(redis.cluster(), WATCHDOG).run(app -> {
            LockTemplate locks = app.getBean(LockTemplate.class);
            String clientId = app.getBean(RedissonLockProvider.class).getRedisson().getId();
            List<String> keys = new ArrayList<>(keyOfSlot.values());
            long start = System.nanoTime();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int first = t;
                Thread thread = new Thread(() -> {
                    for (int i = first; i < keys.size(); i += 8) {
                        String key = keys.get(i);
                        String fullKey = locks.fullKey(key);
                        locks.run(key, () -> {
                            // asked of the owner of the slot, as CLUSTER SLOTS maps it: a MOVED answer throws
                            int owner = view.masterPortFor(fullKey);
                            List<?> fields = (List<?>) view.callOn(owner, "HGETALL", fullKey);
                            long ttl = (Long) view.callOn(owner, "PTTL", fullKey);
                            if (fields.size() != 2 || !fields.get(0).toString().startsWith(clientId + ":")
                                    || !"1".equals(fields.get(1)) || ttl <= 0 || ttl > WATCHDOG.toMillis()) {
                                wrong.add(fullKey + " on " + owner + ": " + fields + " ttl " + ttl);
                            }
                            checkedPerMaster.computeIfAbsent(owner, port -> new AtomicInteger()).incrementAndGet();
                        });
                    }
                }, "slots-" + t);
                thread.start();
                threads.add(thread);
            }
            for (Thread thread : threads) {
                thread.join(120_000);
            }
            System.out.printf("MEASURED cluster: %d keys of %d slots locked and checked on their masters in %d ms "
                    + "(8 threads), per master %s%n", keys.size(), slots.size(),
                    (System.nanoTime() - start) / 1_000_000, checkedPerMaster);
        });

        assertThat(wrong).isEmpty();
        assertThat(checkedPerMaster.keySet()).containsExactlyInAnyOrderElementsOf(
                redis.cluster().masters().stream().map(RedisCluster.Node::port).toList());
        assertThat(checkedPerMaster.values().stream().mapToInt(AtomicInteger::get).sum()).isEqualTo(slots.size());
        // released, every one of them, on every master
        assertThat(redis.cluster().masters()).allSatisfy(master ->
                assertThat(view.keysOn(master.port(), Keys.PREFIX + "*")).isEmpty());
    }

    @Test
    void twoApplicationsExcludeEachOtherOnKeysOfEveryMaster() throws Throwable {
        List<String> keys = keysOnEveryMaster("exclusive:", 8);
        Apps.cluster(redis.cluster(), WATCHDOG).run(first -> Apps.cluster(redis.cluster(), WATCHDOG).run(second -> {
            Exclusion.Result result = new Exclusion(view, keys, 60).run(first, second);
            System.out.printf("MEASURED cluster exclusion: 2 applications x %d threads, %d keys over 3 masters: %s%n",
                    Exclusion.THREADS, keys.size(), result);

            assertThat(result.failures()).isEmpty();
            assertThat(result.bodies()).isEqualTo(2L * Exclusion.THREADS * 60);
            assertThat(result.overlaps()).isZero();
            assertThat(result.lostUpdates()).isZero();
            assertThat(result.notOwner()).isZero();
        }));
    }

    /**
     * FAIR (the hand-off lock): waiters queued beside each lock on its master, grants published from scripts on every
     * master to the waiter's client channel (plain PUBLISH reaches a subscriber on any node).
     */
    @Test
    void twoApplicationsExcludeEachOtherWithFairLocksOnKeysOfEveryMaster() throws Throwable {
        List<String> keys = keysOnEveryMaster("fair:", 4);
        Apps.cluster(redis.cluster(), WATCHDOG).run(first -> Apps.cluster(redis.cluster(), WATCHDOG).run(second -> {
            Exclusion.Result result = new Exclusion(view, keys, 60, 1, io.github.distlock.LockType.FAIR)
                    .run(first, second);
            System.out.printf("MEASURED cluster exclusion, FAIR: 2 applications x %d threads, %d keys over 3 masters: "
                    + "%s%n", Exclusion.THREADS, keys.size(), result);

            assertThat(result.failures()).isEmpty();
            assertThat(result.bodies()).isEqualTo(2L * Exclusion.THREADS * 60);
            assertThat(result.overlaps()).isZero();
            assertThat(result.lostUpdates()).isZero();
            assertThat(result.notOwner()).isZero();
        }));
    }

    /**
     * The same two applications and the same logical keys, but each with its own key prefix, so each locks Redis keys
     * the other never sees: no exclusion between them. Shows that {@link Exclusion} does see overlapping bodies and
     * lost updates when they happen, so the zeros above mean something.
     */
    @Test
    void withoutASharedLockTheSameRunSeesOverlapsAndLostUpdates() throws Throwable {
        List<String> keys = keysOnEveryMaster("exclusive:", 8);
        Apps.cluster(redis.cluster(), WATCHDOG).run(first -> Apps.cluster(redis.cluster(), WATCHDOG)
                .withPropertyValues("distlock.key-prefix=other:").run(second -> {
            Exclusion.Result result = new Exclusion(view, keys, 60).run(first, second);
            System.out.printf("MEASURED cluster exclusion, control with separate prefixes: %s%n", result);

            assertThat(result.overlaps()).isPositive();
            assertThat(result.lostUpdates()).isPositive();
            // each application still found its own lock in Redis: the check itself is not what failed
            assertThat(result.notOwner()).isZero();
        }));
    }

    @Test
    void fencingCountersLiveOnTheNodeOfTheirLockAndTokensRiseAcrossApplications() throws Throwable {
        List<String> keys = new ArrayList<>(keysOnEveryMaster("fenced:", 1));
        // a key with a hash tag: the provider names the counter redisson_lock_token:lock:tenant:{7}:order (no extra
        // braces, as Redisson's prefixName does for names that contain one), which hashes to slot of "7", as the lock
        keys.add("tenant:{7}:order");
        Map<String, List<Long>> tokens = new TreeMap<>();
        Queue<String> wrong = new ConcurrentLinkedQueue<>();

        Apps.cluster(redis.cluster(), WATCHDOG).run(first -> Apps.cluster(redis.cluster(), WATCHDOG).run(second -> {
            List<LockTemplate> apps = List.of(first.getBean(LockTemplate.class), second.getBean(LockTemplate.class));
            for (String key : keys) {
                for (int round = 0; round < 4; round++) {
                    LockTemplate locks = apps.get(round % 2);
                    String fullKey = locks.fullKey(key);
                    String counter = Keys.fencingCounter(fullKey);
                    locks.run(key, new LockOptions(Duration.ZERO, LockOptions.WATCHDOG, true), () -> {
                        long token = LockContext.fencingToken().orElseThrow();
                        tokens.computeIfAbsent(fullKey, k -> new ArrayList<>()).add(token);
                        int lockNode = view.masterPortFor(fullKey);
                        // the counter is on the lock's node (asked there directly: another node would answer MOVED)
                        Object stored = view.callOn(lockNode, "GET", counter);
                        long ttl = (Long) view.callOn(lockNode, "PTTL", counter);
                        Object lockSlot = view.callOn(lockNode, "CLUSTER", "KEYSLOT", fullKey);
                        Object counterSlot = view.callOn(lockNode, "CLUSTER", "KEYSLOT", counter);
                        if (!Long.toString(token).equals(stored) || !lockSlot.equals(counterSlot)
                                || ttl < Duration.ofDays(6).toMillis()) {
                            wrong.add(fullKey + ": token " + token + ", counter " + counter + " = " + stored + " slot "
                                    + counterSlot + " vs lock slot " + lockSlot + ", ttl " + ttl);
                        }
                    });
                }
            }
        }));

        System.out.printf("MEASURED cluster fencing: tokens per key %s%n", tokens);
        assertThat(wrong).isEmpty();
        assertThat(tokens).hasSize(keys.size()).allSatisfy((key, issued) ->
                assertThat(issued).hasSize(4).isSortedAccordingTo(Long::compare).doesNotHaveDuplicates());
        assertThat(RedisCluster.slotOf(Keys.fencingCounter("lock:tenant:{7}:order"))).isEqualTo(RedisCluster.slotOf("7"));
        assertThat(view.get(Keys.fencingCounter("lock:tenant:{7}:order"))).isNotNull();
    }

    @Test
    void multiKeyLocksSpanningEveryMasterAreTakenWholeOrNotAtAll() throws Throwable {
        // one key per master, sorted as the template takes them: the last one is taken last
        List<String> keys = keysOnEveryMaster("multi:", 1).stream().sorted().toList();
        Queue<String> wrong = new ConcurrentLinkedQueue<>();
        Apps.cluster(redis.cluster(), WATCHDOG).run(first -> Apps.cluster(redis.cluster(), WATCHDOG).run(second -> {
            LockTemplate locks = first.getBean(LockTemplate.class);
            LockTemplate other = second.getBean(LockTemplate.class);
            String clientId = first.getBean(RedissonLockProvider.class).getRedisson().getId();

            // whole: each key locked on the master of its slot, each with its own token, counted on that master
            List<Integer> nodes = new ArrayList<>();
            List<String> reversed = new ArrayList<>(keys);
            java.util.Collections.reverse(reversed);
            locks.execute(reversed, new LockOptions(Duration.ZERO, LockOptions.WATCHDOG, true), () -> {
                for (String key : keys) {
                    String fullKey = locks.fullKey(key);
                    int node = view.masterPortFor(fullKey);
                    nodes.add(node);
                    List<?> fields = (List<?>) view.callOn(node, "HGETALL", fullKey);
                    long token = LockContext.fencingToken(fullKey).orElse(-1);
                    Object counter = view.callOn(node, "GET", Keys.fencingCounter(fullKey));
                    if (fields.size() != 2 || !fields.get(0).toString().startsWith(clientId + ":")
                            || !Long.toString(token).equals(counter)) {
                        wrong.add(fullKey + " on " + node + ": " + fields + ", token " + token + ", counter " + counter);
                    }
                }
                return null;
            });
            assertThat(wrong).isEmpty();
            assertThat(nodes).doesNotHaveDuplicates().hasSize(3);

            // or not at all: another application holds the key taken last; the keys taken before it are given back
            CountDownLatch held = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            Thread holder = new Thread(() -> other.run(keys.get(2), () -> {
                held.countDown();
                Latches.await(release);
            }), "multi-holder");
            holder.start();
            Latches.await(held);
            AtomicInteger ran = new AtomicInteger();
            try {
                assertThat(locks.tryExecute(keys, LockOptions.waitFor(Duration.ZERO), ran::incrementAndGet).acquired())
                        .isFalse();
            }
            finally {
                release.countDown();
                holder.join(30_000);
            }
            assertThat(ran).hasValue(0);
            assertThat(keys.subList(0, 2)).allSatisfy(key -> assertThat(view.hash(locks.fullKey(key))).isEmpty());
        }));
    }

    @Test
    void multiKeyAndSingleKeyCallsOfTwoApplicationsAcrossMastersExcludeEachOtherWithoutDeadlock() throws Throwable {
        List<String> keys = keysOnEveryMaster("multi-exclusive:", 4);
        Apps.cluster(redis.cluster(), WATCHDOG).run(first -> Apps.cluster(redis.cluster(), WATCHDOG).run(second -> {
            Exclusion.Result result = new Exclusion(view, keys, 40, 3).run(first, second);
            System.out.printf("MEASURED cluster multi-key exclusion: 2 applications x %d threads, 1-3 of %d keys "
                    + "over 3 masters per call, in random order: %s%n", Exclusion.THREADS, keys.size(), result);

            assertThat(result.failures()).isEmpty();
            assertThat(result.bodies()).isGreaterThanOrEqualTo(2L * Exclusion.THREADS * 40);
            assertThat(result.overlaps()).isZero();
            assertThat(result.lostUpdates()).isZero();
            assertThat(result.notOwner()).isZero();
        }));
    }

    /**
     * A key that contains a {@code {} but no non-empty hash tag ({@code {}}, an unclosed {@code {}, {@code }{}) hashes
     * as a whole, but Redisson names the lock's companions (the unlock channel and latch, the fencing counter) by
     * appending it to a prefix without adding braces when the name has one, so they hash elsewhere: on a cluster the
     * unlock script would touch keys of two slots and be refused ({@code CROSSSLOT}), leaving the key locked by a
     * finished call until its lease ran out (measured on the library before it refused such keys: every release failed,
     * each key stayed locked for its whole lease, fenced calls failed). The library now refuses such keys before
     * locking anything, fenced or not; this keeps it so.
     */
    @Test
    void keyWithABraceButNoHashTagIsRefusedBeforeAnythingIsLocked() throws Throwable {
        List<String> keys = List.of("order:{}:1", "json:{a", "x}{y");
        Apps.cluster(redis.cluster(), WATCHDOG).run(app -> {
            LockTemplate locks = app.getBean(LockTemplate.class);
            List<String> fullKeys = keys.stream().map(locks::fullKey).toList();
            // why: the companions Redisson names from such a key hash to other slots than the key itself
            assertThat(fullKeys).allSatisfy(fullKey -> {
                assertThat(RedisCluster.slotOf("redisson_lock__channel:" + fullKey)).isNotEqualTo(RedisCluster.slotOf(fullKey));
                assertThat(RedisCluster.slotOf(Keys.fencingCounter(fullKey))).isNotEqualTo(RedisCluster.slotOf(fullKey));
            });

            AtomicInteger ran = new AtomicInteger();
            for (String key : keys) {
                for (boolean fenced : List.of(false, true)) {
                    assertThatThrownBy(() -> locks.run(key, new LockOptions(Duration.ZERO, Duration.ofSeconds(1), fenced),
                            ran::incrementAndGet))
                            .isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining(locks.fullKey(key)).hasMessageContaining("hash tag");
                }
            }
            assertThat(ran).hasValue(0);
            assertThat(fullKeys).allSatisfy(fullKey -> {
                assertThat(view.hash(fullKey)).isEmpty();
                assertThat(view.get(Keys.fencingCounter(fullKey))).isNull();
            });
        });
    }

    /** {@code perMaster} keys {@code prefix<n>} for each master. */
    private static List<String> keysOnEveryMaster(String prefix, int perMaster) {
        Map<Integer, List<String>> byMaster = new TreeMap<>();
        for (int i = 0; byMaster.size() < 3 || byMaster.values().stream().anyMatch(list -> list.size() < perMaster); i++) {
            String key = prefix + i;
            List<String> mine = byMaster.computeIfAbsent(view.masterPortFor(Keys.PREFIX + key), port -> new ArrayList<>());
            if (mine.size() < perMaster) {
                mine.add(key);
            }
        }
        return byMaster.values().stream().flatMap(List::stream).collect(Collectors.toList());
    }

    /** A key {@code slot:<n>} for each slot, its full key (with the lock prefix) hashing to that slot. */
    private static Map<Integer, String> keysFor(List<Integer> slots) {
        Map<Integer, String> keys = new TreeMap<>();
        java.util.Set<Integer> wanted = new java.util.HashSet<>(slots);
        for (int i = 0; keys.size() < wanted.size(); i++) {
            int slot = RedisCluster.slotOf(Keys.PREFIX + "slot:" + i);
            if (wanted.contains(slot)) {
                keys.putIfAbsent(slot, "slot:" + i);
            }
        }
        return keys;
    }
}
