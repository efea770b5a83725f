package io.github.distlock.sample;

import io.github.distlock.LockContext;
import io.github.distlock.LockTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Products: create, look up, restock. Restocking uses the {@link LockTemplate} directly ({@link ProductLocks}), under
 * the same fenced product lock as {@link StockService#sell}, so a restock never interleaves with a sale; it reopens
 * the product's lock key that the sale of the last item closed.
 */
@Service
public class ProductService {

    private final ShopRepository repository;
    private final ProductLocks productLocks;
    private final TransactionTemplate transaction;

    ProductService(ShopRepository repository, ProductLocks productLocks, TransactionTemplate transaction) {
        this.repository = repository;
        this.productLocks = productLocks;
        this.transaction = transaction;
    }

    /** Creates a product and returns it. */
    public ProductView create(String name, int stock) {
        return get(repository.insertProduct(name, stock));
    }

    /** The product with its sold count. */
    public ProductView get(long id) {
        return repository.findProductView(id).orElseThrow(() -> new ProductNotFoundException(id));
    }

    /**
     * Adds {@code quantity} items, and reopens the product's lock key if it was closed when the product sold out.
     * The transaction runs inside the lock, so it commits before the lock is released.
     *
     * @throws StaleFencingTokenException when a newer lock holder already wrote the product
     */
    public ProductView restock(long id, int quantity) {
        productLocks.restocking(id, () -> {
            transaction.executeWithoutResult(status -> {
                Product product = repository.findProduct(id).orElseThrow(() -> new ProductNotFoundException(id));
                long token = LockContext.fencingToken().orElseThrow();
                if (!repository.updateStockFenced(id, product.stock() + quantity, token)) {
                    throw new StaleFencingTokenException(id, token);
                }
            });
            return null;
        });
        return get(id);
    }
}
