package io.github.distlock.actuate;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedDeque;

import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;

/**
 * Counts the leases lost lately, for the health details: when each was lost, never which key (keys may carry personal
 * data, and health details are shown more widely than the endpoint). Keeps at most {@value #MAX_KEPT} of them.
 */
public class RecentLeaseLosses implements LockListener {

    /** Bound on the memory a storm of losses can take. */
    static final int MAX_KEPT = 1000;

    private final ConcurrentLinkedDeque<Instant> losses = new ConcurrentLinkedDeque<>();
    private final Duration window;
    private final Clock clock;

    /**
     * @param window how far back a loss counts as recent
     */
    public RecentLeaseLosses(Duration window) {
        this(window, Clock.systemUTC());
    }

    RecentLeaseLosses(Duration window, Clock clock) {
        this.window = window;
        this.clock = clock;
    }

    @Override
    public void onLeaseLost(LockEvent event) {
        losses.addLast(clock.instant());
        while (losses.size() > MAX_KEPT) {
            losses.pollFirst();
        }
    }

    /** How far back a loss counts. */
    public Duration window() {
        return window;
    }

    /** The losses within the window and the latest of them. */
    public Summary summary() {
        Instant since = clock.instant().minus(window);
        int count = 0;
        Instant last = null;
        for (Iterator<Instant> it = losses.descendingIterator(); it.hasNext();) {
            Instant lost = it.next();
            if (lost.isBefore(since)) {
                break;
            }
            if (last == null) {
                last = lost;
            }
            count++;
        }
        return new Summary(count, last);
    }

    /**
     * Lease losses within the window.
     *
     * @param count how many
     * @param last the latest, or {@code null} when none
     */
    public record Summary(int count, Instant last) {
    }
}
