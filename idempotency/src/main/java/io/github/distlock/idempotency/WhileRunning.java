package io.github.distlock.idempotency;

/** What a duplicate gets while the first call with its key is still running. */
public enum WhileRunning {

    /**
     * It waits (up to the wait time) for the first call to finish, then gets its result as any later duplicate
     * would; a first call that failed (and stored no mark) lets it run instead. When the wait runs out first:
     * {@link RequestInProgressException}.
     */
    WAIT,

    /** It fails at once with {@link RequestInProgressException}; the client retries later. */
    REFUSE
}
