package io.github.distlock.sample;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;

import io.github.distlock.ActiveLock;
import io.github.distlock.LockActivity;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * What the dashboard draws after a flash sale ({@link FlashSaleDemo}): when each buyer entered and left the section
 * the product lock guards (the stock read, check and write), and how many buyers queued for the product's lock while
 * the sale ran. Only the products of a sale being recorded are recorded; every other order passes through
 * {@link #enter} at the cost of one map lookup.
 *
 * <p>The queue is this instance's count of calls waiting for the product's lock ({@link LockActivity}), sampled about
 * every millisecond: the dashboard's sale runs on one instance, so that is the whole queue, on any backend.
 */
@Component
public class SaleRecorder {

    /** How often the queue is sampled. */
    private static final long SAMPLE_NANOS = 1_000_000;

    private final Map<Long, Recording> recordings = new ConcurrentHashMap<>();
    private final ObjectProvider<LockActivity> activity;
    /** Run by each buyer right after entering a recorded section; see {@link #whenEntering}. */
    private volatile LongConsumer onEntry;

    SaleRecorder(ObjectProvider<LockActivity> activity) {
        this.activity = activity;
    }

    /**
     * Starts recording the sale of a product: its sections, and, when {@code lockKey} is given, the queue for that
     * full lock key (prefix included). The clock starts now: call it just before the buyers are let go.
     */
    Recording start(long productId, String lockKey) {
        Recording recording = new Recording(productId, lockKey);
        if (recordings.putIfAbsent(productId, recording) != null) {
            throw new IllegalStateException("product " + productId + " is already being recorded");
        }
        if (lockKey != null) {
            recording.sampler = new Thread(recording::sampleQueue, "flash-sale-queue-" + productId);
            recording.sampler.setDaemon(true);
            recording.sampler.start();
        }
        return recording;
    }

    /**
     * Marks a buyer entering the guarded section of a product's sale; close the answer when leaving it (after
     * {@link Section#sold()} if the buyer got the item). Never fails: a product not being recorded gets a section
     * that records nothing.
     */
    Section enter(long productId, long userId) {
        Recording recording = recordings.get(productId);
        if (recording == null) {
            return Section.NONE;
        }
        Section section = new Section(recording, userId, System.nanoTime());
        LongConsumer hook = onEntry;
        if (hook != null) {
            hook.accept(productId);
        }
        return section;
    }

    /** Notes the close of a recorded product's lock key (published on the selling thread, inside its section). */
    @EventListener
    public void soldOut(ProductLocks.ProductSoldOut event) {
        Recording recording = recordings.get(event.productId());
        if (recording != null) {
            recording.keyClosed = new SaleTimeline.KeyClosed(recording.millis(System.nanoTime()), event.waitersTold());
        }
    }

    /**
     * The longest queue for the product's lock seen so far by the recording of its sale running now; 0 when none
     * runs or it samples no queue.
     */
    int queuedAtMost(long productId) {
        Recording recording = recordings.get(productId);
        return (recording == null) ? 0 : recording.mostWaiting;
    }

    /**
     * Runs {@code hook} with the product id in every buyer that enters a recorded section, inside it, until set to
     * {@code null}: lets a test hold buyers inside together, so that what it checks does not depend on thread
     * scheduling.
     */
    void whenEntering(LongConsumer hook) {
        this.onEntry = hook;
    }

    /** One sale being recorded. */
    final class Recording {

        private final long productId;
        private final String lockKey;
        private final long start = System.nanoTime();
        private final List<SaleTimeline.Section> sections = new ArrayList<>();
        private final List<SaleTimeline.QueuePoint> queue = new ArrayList<>();
        private volatile boolean stopped;
        private volatile int mostWaiting;
        private volatile SaleTimeline.KeyClosed keyClosed;
        private Thread sampler;

        private Recording(long productId, String lockKey) {
            this.productId = productId;
            this.lockKey = lockKey;
        }

        /** Stops the recording (once every buyer has been answered) and returns what it recorded. */
        SaleTimeline stop() throws InterruptedException {
            long end = System.nanoTime();
            stopped = true;
            if (sampler != null) {
                sampler.join();
            }
            recordings.remove(productId, this);
            List<SaleTimeline.Section> ordered;
            synchronized (sections) {
                ordered = new ArrayList<>(sections);
            }
            ordered.sort(Comparator.comparingDouble(SaleTimeline.Section::enteredMillis));
            // the sampler has ended: its list is no longer written
            return new SaleTimeline(millis(end), lockKey, ordered, List.copyOf(queue), keyClosed);
        }

        private void sampleQueue() {
            LockActivity locks = activity.getIfAvailable();
            int last = -1;
            while (!stopped) {
                int waiting = 0;
                if (locks != null) {
                    for (ActiveLock lock : locks.activeLocks()) {
                        if (!lock.held() && lock.key().equals(lockKey)) {
                            waiting++;
                        }
                    }
                }
                // only the changes: the dashboard draws steps between them
                if (waiting != last) {
                    queue.add(new SaleTimeline.QueuePoint(millis(System.nanoTime()), waiting));
                    last = waiting;
                    mostWaiting = Math.max(mostWaiting, waiting);
                }
                LockSupport.parkNanos(SAMPLE_NANOS);
            }
        }

        private void add(SaleTimeline.Section section) {
            synchronized (sections) {
                sections.add(section);
            }
        }

        private double millis(long nanos) {
            // to the microsecond: enough to tell one short section from the next
            return Math.round((nanos - start) / 1_000.0) / 1_000.0;
        }
    }

    /** A buyer inside the guarded section; {@link #close()} records when it left. */
    static final class Section implements AutoCloseable {

        static final Section NONE = new Section(null, 0, 0);

        private final Recording recording;
        private final long userId;
        private final long entered;
        private boolean sold;

        private Section(Recording recording, long userId, long entered) {
            this.recording = recording;
            this.userId = userId;
            this.entered = entered;
        }

        /** The buyer got the item: the sale committed. */
        void sold() {
            // NONE is shared by every unrecorded order: left untouched
            if (recording != null) {
                this.sold = true;
            }
        }

        @Override
        public void close() {
            if (recording != null) {
                recording.add(new SaleTimeline.Section(userId, recording.millis(entered),
                        recording.millis(System.nanoTime()), sold ? "sold" : "refused"));
            }
        }
    }
}
