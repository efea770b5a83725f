package io.github.distlock.sample;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockContext;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Sells stock under the product's fenced lock. A bean of its own so that {@link OrderService} calls it through the
 * proxy: a nested lock taken by calling a method of the same bean would be skipped (self-invocation).
 */
@Service
public class StockService {

    private final ShopRepository repository;

    StockService(ShopRepository repository) {
        this.repository = repository;
    }

    /**
     * Takes {@code quantity} items of the product and records the user's order, in one transaction that commits
     * before the product lock is released. Buyers of one product wait up to {@code distlock.wait-time} for the lock.
     *
     * <p>The stock is read, checked and written back: correct only because no other caller holds the product lock
     * meanwhile. The fencing token makes the write conditional as well, so a holder whose lock expired under it
     * cannot overwrite a newer holder's stock.
     *
     * @throws ProductNotFoundException when the product does not exist
     * @throws OutOfStockException when fewer than {@code quantity} items are left
     * @throws StaleFencingTokenException when a newer lock holder already wrote the product
     */
    @DistributedLock(key = "'product:' + #productId", fenced = true)
    @Transactional
    public Order sell(long userId, long productId, int quantity) {
        Product product = repository.findProduct(productId).orElseThrow(() -> new ProductNotFoundException(productId));
        if (product.stock() < quantity) {
            throw new OutOfStockException(productId, quantity, product.stock());
        }
        long token = LockContext.fencingToken()
                .orElseThrow(() -> new IllegalStateException("sell() must run under the fenced product lock"));
        if (!repository.updateStockFenced(productId, product.stock() - quantity, token)) {
            throw new StaleFencingTokenException(productId, token);
        }
        return repository.insertOrder(userId, productId, quantity);
    }
}
