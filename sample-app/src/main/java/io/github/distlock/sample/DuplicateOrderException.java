package io.github.distlock.sample;

/** The user already has an order for the product (a double click or retry that came after the first finished). */
public class DuplicateOrderException extends RuntimeException {

    private final long userId;
    private final long productId;

    /** For the user and product that already have an order. */
    public DuplicateOrderException(long userId, long productId) {
        super("User " + userId + " already ordered product " + productId);
        this.userId = userId;
        this.productId = productId;
    }

    /** The user. */
    public long getUserId() {
        return userId;
    }

    /** The product. */
    public long getProductId() {
        return productId;
    }
}
