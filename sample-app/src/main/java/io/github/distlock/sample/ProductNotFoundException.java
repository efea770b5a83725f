package io.github.distlock.sample;

/** No product has the id. */
public class ProductNotFoundException extends RuntimeException {

    private final long productId;

    /** For the id looked for. */
    public ProductNotFoundException(long productId) {
        super("No product " + productId);
        this.productId = productId;
    }

    /** The id looked for. */
    public long getProductId() {
        return productId;
    }
}
