package io.github.distlock.etcd;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/** The provider's current session lease: granted when first needed, again after a loss, revoked on close. */
final class EtcdSessions {

    private final EtcdLockRepository repository;
    private final ScheduledExecutorService timer;
    private final long ttlSeconds;
    private final AtomicReference<CompletableFuture<EtcdSession>> session = new AtomicReference<>();
    private volatile Runnable lost = () -> { };

    EtcdSessions(EtcdLockRepository repository, ScheduledExecutorService timer, long ttlSeconds) {
        this.repository = repository;
        this.timer = timer;
        this.ttlSeconds = ttlSeconds;
    }

    /** The session lease, granted when first needed and again after a loss. */
    CompletableFuture<EtcdSession> current() {
        while (true) {
            CompletableFuture<EtcdSession> current = session.get();
            if (current != null && !(current.isDone()
                    && (current.isCompletedExceptionally() || current.join().lost.get()))) {
                return current;
            }
            CompletableFuture<EtcdSession> fresh = new CompletableFuture<>();
            if (session.compareAndSet(current, fresh)) {
                long asked = System.nanoTime();
                repository.grant(ttlSeconds).whenComplete((grant, failure) -> {
                    if (failure != null) {
                        session.compareAndSet(fresh, null);
                        fresh.completeExceptionally(EtcdLockProvider.unwrap(failure));
                        return;
                    }
                    EtcdSession granted = new EtcdSession(repository, timer, this, grant.getID(), grant.getTTL(),
                            asked, fresh);
                    fresh.complete(granted);
                    granted.start();
                });
                return fresh;
            }
        }
    }

    /** Runs {@code listener} after a session lease was lost (and stopped being the current one). */
    void onLost(Runnable listener) {
        this.lost = listener;
    }

    /** A lost session stops being the current one, so that the next acquisition grants a new lease. */
    void unpublish(CompletableFuture<EtcdSession> published) {
        session.compareAndSet(published, null);
        lost.run();
    }

    /** Stops renewing the current session lease and revokes it, waiting up to a second for the answer. */
    void revokeCurrent() {
        CompletableFuture<EtcdSession> current = session.getAndSet(null);
        if (current != null && current.isDone() && !current.isCompletedExceptionally()) {
            EtcdSession s = current.join();
            s.stop();
            // waited for (briefly): a client closed right after this would cut the revocation off
            try {
                repository.revoke(s.leaseId).orTimeout(1, TimeUnit.SECONDS).exceptionally(failure -> null).join();
            }
            catch (RuntimeException ignored) {
                // unreachable: the lease expires within its TTL
            }
        }
    }
}
