package io.github.distlock.sample;

/** No order has the id. */
public class OrderNotFoundException extends RuntimeException {

    private final long orderId;

    /** For the id looked for. */
    public OrderNotFoundException(long orderId) {
        super("No order " + orderId);
        this.orderId = orderId;
    }

    /** The id looked for. */
    public long getOrderId() {
        return orderId;
    }
}
