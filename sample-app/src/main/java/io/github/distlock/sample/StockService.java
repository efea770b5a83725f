package io.github.distlock.sample;

import io.github.distlock.LockContext;
import io.github.distlock.LockKeyClosedException;
import org.springframework.stereotype.Service;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Sells stock under the product's fenced lock ({@link ProductLocks}), and closes the product's lock key when the last
 * item is gone, so that the buyers still queued for it are answered at once.
 */
@Service
public class StockService {

    private final ShopRepository repository;
    private final ProductLocks productLocks;
    private final TransactionTemplate transaction;
    private final SaleRecorder recorder;

    StockService(ShopRepository repository, ProductLocks productLocks, TransactionTemplate transaction,
            SaleRecorder recorder) {
        this.repository = repository;
        this.productLocks = productLocks;
        this.transaction = transaction;
        this.recorder = recorder;
    }

    /**
     * Takes {@code quantity} items of the product and records the user's order, in one transaction that commits
     * before the product lock is released. Buyers of one product queue up to {@code distlock.wait-time} for the lock,
     * in arrival order where the backend has fair locks.
     *
     * <p>The stock is read, checked and written back: correct only because no other caller holds the product lock
     * meanwhile. The fencing token makes the write conditional as well, so a holder whose lock expired under it
     * cannot overwrite a newer holder's stock.
     *
     * <p>The sale that leaves the stock at 0 closes the product's key once its transaction has committed, still
     * holding the lock: the buyers queued behind it, and those who come until a restock, are refused at once with
     * {@link OutOfStockException}. Closing before the commit could tell a buyer "sold out" about a sale that then
     * rolls back; closing after the release would let the next buyer take the lock for nothing.
     *
     * @throws ProductNotFoundException when the product does not exist
     * @throws OutOfStockException when fewer than {@code quantity} items are left, or the product's key is closed
     * because it sold out
     * @throws StaleFencingTokenException when a newer lock holder already wrote the product
     */
    public Order sell(long userId, long productId, int quantity) {
        try {
            return productLocks.selling(productId, () -> {
                // the dashboard's timeline: a no-op unless this product's flash sale is being recorded
                try (SaleRecorder.Section section = recorder.enter(productId, userId)) {
                    Sale sale = transaction.execute(status -> sellInTransaction(userId, productId, quantity));
                    // committed: transaction.execute returns only after the commit, and throws if it failed
                    section.sold();
                    if (sale.stockLeft() == 0) {
                        productLocks.closeSoldOut(productId);
                    }
                    return sale.order();
                }
            });
        }
        catch (LockKeyClosedException ex) {
            // closed only by the sale that took the last item, after its commit: the stock is 0
            throw new OutOfStockException(productId, quantity, 0, ex);
        }
    }

    private Sale sellInTransaction(long userId, long productId, int quantity) {
        Product product = repository.findProduct(productId).orElseThrow(() -> new ProductNotFoundException(productId));
        if (product.stock() < quantity) {
            throw new OutOfStockException(productId, quantity, product.stock());
        }
        long token = LockContext.fencingToken()
                .orElseThrow(() -> new IllegalStateException("sell() must run under the fenced product lock"));
        int left = product.stock() - quantity;
        if (!repository.updateStockFenced(productId, left, token)) {
            throw new StaleFencingTokenException(productId, token);
        }
        return new Sale(repository.insertOrder(userId, productId, quantity), left);
    }

    /** A committed sale: the order, and the stock it left. */
    private record Sale(Order order, int stockLeft) {
    }
}
