package io.github.distlock.sample;

/**
 * The product row was last written under a newer fencing token than the one this call holds, so the write was
 * refused and the transaction rolled back. It happens when this holder's lock expired (a long GC pause, a lost
 * watchdog renewal) and another caller took it meanwhile, or when Redis lost its token counter (a restart without
 * persistence): either way this call must not write.
 */
public class StaleFencingTokenException extends RuntimeException {

    private final long productId;
    private final long token;

    /** For the product and the token that was refused. */
    public StaleFencingTokenException(long productId, long token) {
        super("Fencing token " + token + " for product " + productId + " is older than the one that last wrote it");
        this.productId = productId;
        this.token = token;
    }

    /** The product. */
    public long getProductId() {
        return productId;
    }

    /** The refused token. */
    public long getToken() {
        return token;
    }
}
