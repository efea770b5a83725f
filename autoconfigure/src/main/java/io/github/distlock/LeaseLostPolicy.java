package io.github.distlock;

/**
 * What a lock call does to its own running code when the backend reports, while the code still runs, that the lock is
 * no longer held (renewal stopped working, the session or lease expired, the key was taken away): the moment another
 * caller may already be inside. Chosen per call ({@link DistributedLock#onLeaseLost()},
 * {@link LockOptions#withLeaseLostPolicy}). Whatever the policy, the loss is also reported as before (the WARN log,
 * {@link LockListener#onLeaseLost}, metrics).
 *
 * <p>The stop is delivered once, as soon as the loss is known, and never after the code has returned. A call whose
 * code was stopped and then ended with an exception fails with {@link LockLeaseLostException} naming the key, the
 * code's own exception as its cause; code that finishes normally in spite of the stop keeps its result (a lost lease
 * never turns finished work into a failure).
 *
 * <p>{@link LockTemplate#acquireAsync} runs no code of its own, so it accepts {@code REPORT} only; code that holds a
 * {@link HeldLock} stops itself through {@link HeldLock#whenLost}. A nested call that re-enters a lock its thread
 * holds is stopped by the outer call's policy (it took the lock).
 */
public enum LeaseLostPolicy {

    /** Report the loss only; the code runs on. The default, and what distlock did before the policy existed. */
    REPORT,

    /**
     * Interrupt the thread running the code (platform or virtual), once. For blocking calls only
     * ({@code execute}, {@code tryExecute}, a {@link DistributedLock} method returning a plain value): an asynchronous
     * call's code runs on threads the lock does not know, so this policy is refused there (use {@link #CANCEL}). The
     * interrupt is taken back (the thread's interrupt status cleared) when the code returns, so it never reaches the
     * next task of a pooled thread.
     */
    INTERRUPT,

    /**
     * Cancel the work: the {@code CompletableFuture} the code returned is cancelled, the subscription of the
     * {@code Mono}/{@code Flux} is disposed (the subscriber gets {@link LockLeaseLostException}). A blocking call's only
     * means of cancelling is its thread's interrupt, so on blocking calls this is {@link #INTERRUPT}.
     */
    CANCEL
}
