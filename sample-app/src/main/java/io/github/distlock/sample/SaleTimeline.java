package io.github.distlock.sample;

import java.util.List;

/**
 * What happened during one flash sale, in milliseconds since its buyers were let go: what the dashboard draws.
 *
 * @param durationMillis until the last buyer was answered
 * @param lockKey the product's full lock key whose queue was sampled, or {@code null} for the sale without locks
 * @param sections every buyer's stay in the section the product lock guards (read the stock, check it, write it),
 * in the order they entered; buyers refused before it (sold out while they queued, a duplicate) never entered
 * @param queue the number of buyers waiting for the product's lock, at each change; empty without locks
 * @param keyClosed when the last item sold and the product's lock key was closed, or {@code null} when it was not
 * (without locks, a backend that cannot close keys, a sale that did not sell out)
 */
public record SaleTimeline(double durationMillis, String lockKey, List<Section> sections, List<QueuePoint> queue,
        KeyClosed keyClosed) {

    /**
     * One buyer inside the guarded section.
     *
     * @param userId the buyer
     * @param enteredMillis when it entered
     * @param leftMillis when it left
     * @param outcome {@code sold} when its sale committed, else {@code refused} (it found too little stock)
     */
    public record Section(long userId, double enteredMillis, double leftMillis, String outcome) {
    }

    /**
     * The queue for the product's lock from this moment on.
     *
     * @param atMillis when it was seen
     * @param waiting buyers waiting for the lock
     */
    public record QueuePoint(double atMillis, int waiting) {
    }

    /**
     * The close of the product's lock key by the sale that took the last item ({@link ProductLocks#closeSoldOut}).
     *
     * @param atMillis when the close had answered
     * @param waitersTold the queued buyers the backend told at once that the product sold out
     */
    public record KeyClosed(double atMillis, long waitersTold) {
    }
}
