package io.github.distlock.jdbc;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockOwner;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * 8 instances race to take over the same expired row (a dead holder's), at each database's default isolation.
 * Invariant: exactly one wins each round; nobody gets an error.
 */
class OneInstanceTakesOverAnExpiredRowTest {

    @RegisterExtension
    static final Database h2 = Database.h2();

    @RegisterExtension
    static final Database postgres = Database.postgres();

    @Test
    void oneInstanceTakesOverAnExpiredRowOnH2() throws Exception {
        race(h2);
    }

    @Test
    void oneInstanceTakesOverAnExpiredRowOnPostgres() throws Exception {
        race(postgres);
    }

    private static void race(Database db) throws Exception {
        int instances = 8;
        List<JdbcLockProvider> providers = new ArrayList<>();
        ExecutorService callers = Executors.newFixedThreadPool(instances);
        try {
            for (int i = 0; i < instances; i++) {
                providers.add(new JdbcLockProvider(db.dataSource(), JdbcLockProviderContract.options()));
            }
            for (int round = 0; round < 60; round++) {
                String key = "review:takeover:" + round + ":" + System.nanoTime();
                db.update("INSERT INTO distlock_lock (lock_key, owner, instance, expires_at, token) VALUES (?, 'dead:1', "
                        + "NULL, 0, 5)", key);
                CyclicBarrier start = new CyclicBarrier(instances);
                List<Future<LockHandle>> tries = new ArrayList<>();
                for (JdbcLockProvider provider : providers) {
                    tries.add(callers.submit(() -> {
                        start.await();
                        CompletableFuture<LockHandle> f = provider.acquire(new LockRequest(key, 0,
                                TimeUnit.SECONDS.toNanos(60), true, LockOwner.next()));
                        return f.get(30, TimeUnit.SECONDS);
                    }));
                }
                List<LockHandle> won = new ArrayList<>();
                for (Future<LockHandle> t : tries) {
                    LockHandle handle = t.get();
                    if (handle != null) {
                        won.add(handle);
                    }
                }
                assertThat(won).as("round " + round + " on " + db).hasSize(1);
                assertThat(won.get(0).fencingToken()).isGreaterThan(5);
                won.get(0).release();
            }
        }
        finally {
            callers.shutdownNow();
            providers.forEach(JdbcLockProvider::close);
        }
    }
}
