package io.github.distlock.topology;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.redisson.RedissonLockProvider;
import org.springframework.context.ApplicationContext;

/**
 * Two applications (two Spring contexts, two Redisson clients) hammer the same keys from {@value #THREADS} threads
 * each. Every body reads a per-key counter that nothing synchronizes, asks the master serving the key who holds the lock
 * (a round trip: a real window for a second body to slip in), and writes the counter back plus one. With mutual
 * exclusion no update is lost and no two bodies of a key overlap; without it both happen, which
 * {@link Result#overlaps()} and {@link Result#lostUpdates()} count.
 */
final class Exclusion {

    static final int THREADS = 8;

    private final RedisView view;
    private final List<String> keys;
    private final int callsPerThread;
    /** How many keys one call locks at most (1: single-key calls only). */
    private final int maxKeysPerCall;

    /** Plain ints, deliberately: a lost update is the symptom of two holders. */
    private final int[] counters;
    private final AtomicInteger[] inside;
    private final AtomicLong overlaps = new AtomicLong();
    private final AtomicLong bodies = new AtomicLong();
    private final AtomicLong notOwner = new AtomicLong();
    private final Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
    private final LockOptions options;

    Exclusion(RedisView view, List<String> keys, int callsPerThread) {
        this(view, keys, callsPerThread, 1);
    }

    /**
     * @param maxKeysPerCall each call locks between 1 and this many distinct keys, picked at random and passed in random
     * order ({@link LockTemplate#execute(java.util.Collection, LockOptions, io.github.distlock.LockCallback)} for more
     * than one): calls locking {A, B} and {B, A} must neither overlap nor deadlock
     */
    Exclusion(RedisView view, List<String> keys, int callsPerThread, int maxKeysPerCall) {
        this(view, keys, callsPerThread, maxKeysPerCall, io.github.distlock.LockType.REENTRANT);
    }

    /** As above, with locks of {@code type}. */
    Exclusion(RedisView view, List<String> keys, int callsPerThread, int maxKeysPerCall,
            io.github.distlock.LockType type) {
        this.options = LockOptions.waitFor(Duration.ofSeconds(10)).withType(type);
        this.view = view;
        this.keys = keys;
        this.callsPerThread = callsPerThread;
        this.maxKeysPerCall = maxKeysPerCall;
        this.counters = new int[keys.size()];
        this.inside = new AtomicInteger[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            inside[i] = new AtomicInteger();
        }
    }

    /**
     * @param bodies bodies run, counted once per key they held
     * @param counted sum of the counters the bodies incremented
     * @param lostUpdates {@code bodies - counted}
     * @param overlaps times a body found another body of its key running (in either application)
     * @param notOwner bodies that found their key's lock, in Redis, not held by their own application's client
     * @param millis how long the run took
     */
    record Result(long bodies, long counted, long lostUpdates, long overlaps, long notOwner, List<Throwable> failures,
            long millis) {
    }

    /** Runs {@value #THREADS} threads per application, each making {@code callsPerThread} calls on random keys. */
    Result run(ApplicationContext first, ApplicationContext second) throws InterruptedException {
        long start = System.nanoTime();
        List<Thread> threads = new ArrayList<>();
        for (ApplicationContext app : List.of(first, second)) {
            LockTemplate locks = app.getBean(LockTemplate.class);
            String clientId = app.getBean(RedissonLockProvider.class).getRedisson().getId();
            for (int t = 0; t < THREADS; t++) {
                Thread thread = new Thread(() -> calls(locks, clientId), "exclusion-" + clientId.substring(0, 4) + "-" + t);
                thread.start();
                threads.add(thread);
            }
        }
        for (Thread thread : threads) {
            thread.join(120_000);
        }
        long counted = 0;
        synchronized (counters) {
            for (int counter : counters) {
                counted += counter;
            }
        }
        return new Result(bodies.get(), counted, bodies.get() - counted, overlaps.get(), notOwner.get(),
                List.copyOf(failures), (System.nanoTime() - start) / 1_000_000);
    }

    private void calls(LockTemplate locks, String clientId) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int call = 0; call < callsPerThread; call++) {
            List<Integer> picked = new ArrayList<>();
            int count = 1 + random.nextInt(maxKeysPerCall);
            while (picked.size() < count) {
                int k = random.nextInt(keys.size());
                if (!picked.contains(k)) {
                    picked.add(k);
                }
            }
            try {
                if (picked.size() == 1) {
                    locks.run(keys.get(picked.get(0)), options,
                            () -> body(locks, clientId, picked));
                }
                else {
                    locks.execute(picked.stream().map(keys::get).toList(), options,
                            () -> body(locks, clientId, picked));
                }
            }
            catch (Throwable ex) {
                failures.add(ex);
            }
        }
    }

    private Object body(LockTemplate locks, String clientId, List<Integer> picked) {
        for (int k : picked) {
            if (inside[k].incrementAndGet() != 1) {
                overlaps.incrementAndGet();
            }
        }
        try {
            bodies.addAndGet(picked.size());
            int[] before = new int[picked.size()];
            for (int i = 0; i < picked.size(); i++) {
                before[i] = counters[picked.get(i)];
            }
            for (int k : picked) {
                Map<String, String> holders = view.hash(locks.fullKey(keys.get(k)));
                if (holders.size() != 1 || !holders.keySet().iterator().next().startsWith(clientId + ":")) {
                    notOwner.incrementAndGet();
                }
            }
            for (int i = 0; i < picked.size(); i++) {
                counters[picked.get(i)] = before[i] + 1;
            }
            return null;
        }
        finally {
            for (int k : picked) {
                inside[k].decrementAndGet();
            }
        }
    }
}
