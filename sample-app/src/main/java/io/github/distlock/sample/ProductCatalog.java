package io.github.distlock.sample;

import java.util.concurrent.atomic.AtomicLong;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.cache.annotation.Cacheable;
import org.springframework.stereotype.Service;

/**
 * Product details, cached in the shop's cache ({@link ProductCacheConfiguration}: Redis, shared by every instance).
 * {@code sync = true} with {@code distlock.cache.single-flight.enabled=true}: when an entry is missing (first visit,
 * or after its time to live), one caller on one instance reads the database and stores it; the callers that came
 * meanwhile, on every instance, wait for it and read what it stored.
 */
@Service
public class ProductCatalog {

    private static final Log logger = LogFactory.getLog(ProductCatalog.class);

    private final ShopRepository repository;

    private final AtomicLong loads = new AtomicLong();

    ProductCatalog(ShopRepository repository) {
        this.repository = repository;
    }

    /** The product's details, from the cache or, once per missing entry, from the database. */
    @Cacheable(cacheNames = ProductCacheConfiguration.PRODUCT_DETAILS, sync = true)
    public ProductDetails details(long id) {
        loads.incrementAndGet();
        logger.debug("Loading the details of product " + id + " from the database");
        return repository.findProduct(id).map(product -> new ProductDetails(product.id(), product.name()))
                .orElseThrow(() -> new ProductNotFoundException(id));
    }

    /** How often this instance read product details from the database. */
    public long loads() {
        return loads.get();
    }
}
