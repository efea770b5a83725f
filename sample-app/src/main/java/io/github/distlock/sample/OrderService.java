package io.github.distlock.sample;

import java.util.List;

import io.github.distlock.DistributedLock;
import org.springframework.stereotype.Service;

/**
 * Places orders: one per user and product, never more than the stock. Two locks, taken in a fixed order (user and
 * product, then product), so no two callers can wait on each other's lock.
 */
@Service
public class OrderService {

    private final ShopRepository repository;
    private final StockService stock;

    OrderService(ShopRepository repository, StockService stock) {
        this.repository = repository;
        this.stock = stock;
    }

    /**
     * Places the order. A duplicate submitted while the first is still running finds this lock taken and fails at
     * once ({@code waitTime = 0}: a {@link io.github.distlock.LockAcquisitionException}, answered with 409); one
     * submitted after the first finished finds its order ({@link DuplicateOrderException}, also 409).
     */
    @DistributedLock(key = "'order:' + #userId + ':' + #productId", waitTime = 0)
    public Order placeOrder(long userId, long productId, int quantity) {
        if (repository.hasOrder(userId, productId)) {
            throw new DuplicateOrderException(userId, productId);
        }
        // Sold out is refused here without queueing for the product lock; sell() checks again under the lock.
        Product product = repository.findProduct(productId).orElseThrow(() -> new ProductNotFoundException(productId));
        if (product.stock() < quantity) {
            throw new OutOfStockException(productId, quantity, product.stock());
        }
        return stock.sell(userId, productId, quantity);
    }

    /**
     * The order with this id.
     *
     * @throws OrderNotFoundException when there is none
     */
    public Order order(long id) {
        return repository.findOrder(id).orElseThrow(() -> new OrderNotFoundException(id));
    }

    /** The user's orders. */
    public List<Order> ordersOf(long userId) {
        return repository.findOrders(userId);
    }
}
