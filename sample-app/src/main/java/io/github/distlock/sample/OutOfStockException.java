package io.github.distlock.sample;

/** Fewer items are left than the order asks for. */
public class OutOfStockException extends RuntimeException {

    private final long productId;
    private final int available;

    /** For the product and the stock seen. */
    public OutOfStockException(long productId, int requested, int available) {
        super("Product " + productId + " has " + available + " left, " + requested + " requested");
        this.productId = productId;
        this.available = available;
    }

    /** For the product and the stock seen, refused because of {@code cause} (such as a closed lock key). */
    public OutOfStockException(long productId, int requested, int available, Throwable cause) {
        this(productId, requested, available);
        initCause(cause);
    }

    /** The product. */
    public long getProductId() {
        return productId;
    }

    /** The items left when the order was refused. */
    public int getAvailable() {
        return available;
    }
}
