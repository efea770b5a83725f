package io.github.distlock.sample;

import java.time.Instant;
import java.util.concurrent.atomic.AtomicBoolean;

import io.github.distlock.LockCallback;
import io.github.distlock.LockKeyClosedException;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import io.github.distlock.LockType;
import io.github.distlock.spi.LockProvider;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.stereotype.Component;

/**
 * The product lock ({@code product:<id>}), shared by the sale ({@link StockService#sell}) and the restock
 * ({@link ProductService#restock}): both must take the same kind of lock on one key, since {@code REENTRANT} and
 * {@code FAIR} are separate families.
 *
 * <p>The kind is chosen once, at startup, from what the backend can do: {@link LockType#FAIR} where it has fair locks
 * (Redis, ZooKeeper, etcd) — buyers are served in the order they came, and on Redis the release hands the lock straight
 * to the next buyer — and {@link LockType#REENTRANT} where it has not (the database backend); fenced either way. An
 * annotation attribute cannot vary by backend, which is why both callers use the {@link LockTemplate}.
 *
 * <p>When a sale takes the last item, {@link #closeSoldOut} closes the key: the buyers still queued for it get
 * {@link LockKeyClosedException} at once (answered as out of stock), instead of each taking the lock in turn only to
 * find nothing left. A restock reopens it. Every first-party backend closes keys (Redis: FAIR keys, the others: every
 * type); a backend that cannot is logged once, and its buyers wait their turn as before.
 *
 * <p>Invariant: a key is closed only by the holder of its lock, after the transaction that brought the stock to 0
 * committed; a restock reopens it and then adds stock under the lock. So while a key is closed the committed stock
 * is 0, and a waiter told "sold out" was told the truth.
 */
@Component
public class ProductLocks {

    private static final Log log = LogFactory.getLog(ProductLocks.class);

    /** What buyers refused by a closed key are told (the exception's reason). */
    static final String SOLD_OUT = "sold out";

    /** A restock that finds the key closed again between its reopen and its lock: see {@link #restocking}. */
    private static final int RESTOCK_ATTEMPTS = 5;

    private final LockTemplate locks;
    private final ApplicationEventPublisher events;
    private final LockOptions sellOptions;
    private final LockOptions restockOptions;
    private final String backend;
    /** False once the backend said it cannot close keys: not asked again. */
    private final AtomicBoolean closable;

    ProductLocks(LockTemplate locks, LockProvider provider, ApplicationEventPublisher events) {
        this.locks = locks;
        this.events = events;
        // a backend's provider may be an anonymous class: its simple name is empty
        String simpleName = provider.getClass().getSimpleName();
        this.backend = simpleName.isEmpty() ? provider.getClass().getName() : simpleName;
        boolean fair = provider.supports(LockType.FAIR, true);
        LockOptions options = LockOptions.DEFAULTS.withFencing().withType(fair ? LockType.FAIR : LockType.REENTRANT);
        // the names the annotated methods had: metrics and the actuator keep their tags
        this.sellOptions = options.withName("StockService.sell");
        this.restockOptions = options.withName("ProductService.restock");
        this.closable = new AtomicBoolean(true);
        if (fair) {
            log.info("Product locks are FAIR on " + backend + ": buyers are served in arrival order");
        }
        else {
            log.info("Product locks are REENTRANT on " + backend + " (no fair locks there): buyers are served in no"
                    + " particular order");
        }
    }

    /** The lock key of a product, as given to the {@link LockTemplate} (without the prefix). */
    static String key(long productId) {
        return "product:" + productId;
    }

    /** The options of the sale's lock: fenced, {@code FAIR} or {@code REENTRANT} as chosen at startup. */
    public LockOptions sellOptions() {
        return sellOptions;
    }

    /** Runs {@code sale} under the product's lock; a closed key throws {@link LockKeyClosedException}. */
    <T, E extends Throwable> T selling(long productId, LockCallback<T, E> sale) throws E {
        return locks.execute(key(productId), sellOptions, sale);
    }

    /**
     * Reopens the product's key and runs {@code restock} under its lock. A sale that takes the last item between the
     * reopen and the lock closes the key again and the lock is refused: then this reopens once more. The loop ends
     * because a key is closed only by a sale that brought the stock to 0, and only the restock brings it back up.
     */
    <E extends Throwable> void restocking(long productId, LockCallback<Void, E> restock) throws E {
        for (int attempt = 1;; attempt++) {
            reopen(productId);
            try {
                locks.execute(key(productId), restockOptions, restock);
                return;
            }
            catch (LockKeyClosedException ex) {
                if (attempt == RESTOCK_ATTEMPTS) {
                    throw ex;
                }
            }
        }
    }

    /**
     * Closes the key of a product whose last item was just sold. Call it holding the product's lock, after the sale's
     * transaction committed: a buyer told "sold out" must never see a sale that then rolls back. Never fails the sale
     * that calls it: a backend that cannot close keys is logged once, one that fails is logged; either way the buyers
     * still queued wait their turn and find no stock, as they would without the close.
     */
    void closeSoldOut(long productId) {
        if (!closable.get()) {
            return;
        }
        Instant closing = Instant.now();
        long told;
        try {
            told = locks.closeKey(key(productId), SOLD_OUT);
        }
        catch (UnsupportedOperationException ex) {
            cannotClose(ex);
            return;
        }
        catch (RuntimeException ex) {
            log.warn("Could not close the lock key of sold-out product " + productId + "; its queued buyers wait"
                    + " their turn and find no stock: " + ex);
            return;
        }
        log.debug("Product " + productId + " sold out: closed its lock key, " + told + " queued buyer(s) told");
        events.publishEvent(new ProductSoldOut(productId, closing, told));
    }

    private void reopen(long productId) {
        if (closable.get()) {
            try {
                locks.reopenKey(key(productId));
            }
            catch (UnsupportedOperationException ex) {
                cannotClose(ex);
            }
        }
    }

    /** The first call that finds the backend cannot close keys says so, once. */
    private void cannotClose(UnsupportedOperationException ex) {
        if (closable.compareAndSet(true, false)) {
            log.info(backend + " cannot close lock keys: buyers queued for a product that sells out wait their turn"
                    + " and are then told it is out of stock");
        }
    }

    /**
     * Published when a product sold out and its lock key was closed; on the selling thread, which still holds the
     * product lock: keep listeners short.
     *
     * @param productId the product
     * @param closingAt when the close was sent (before Redis told the waiters)
     * @param waitersTold how many queued buyers the backend told
     */
    public record ProductSoldOut(long productId, Instant closingAt, long waitersTold) {
    }
}
