package io.github.distlock.sample;

import io.github.distlock.idempotency.Idempotent;
import org.springframework.stereotype.Service;

/**
 * Orders placed with an {@code Idempotency-Key} (the IETF draft "The Idempotency-Key HTTP Header Field"): the first
 * request with a key places the order; every retry with that key, concurrent or later, on any instance, gets the same
 * order back without placing another, for as long as the key's mark lives ({@code sample.idempotency.ttl}).
 */
@Service
public class IdempotentOrderService {

    private final OrderService orders;

    IdempotentOrderService(OrderService orders) {
        this.orders = orders;
    }

    /**
     * Places the order once per key. A retry that arrives while the first request still runs waits for it (up to
     * {@code distlock.idempotency.wait-time}) and gets its order: a client that timed out and retried sees a 201, not a
     * 409. The same key with another body fails with
     * {@link io.github.distlock.idempotency.IdempotencyKeyReusedException} (422). A request that failed (sold out, say)
     * stores nothing: its retry runs again.
     *
     * <p>A key is the user's: the same key from another user is another request (the draft leaves keys to the
     * client, and two clients can pick one by mistake), not a 422 and never the first user's order. The shop has no
     * sign-in, so the user is the body's {@code userId}; an application with authentication would scope by the
     * authenticated principal instead.
     */
    @Idempotent(key = "'order-request:' + #request.userId() + ':' + #idempotencyKey", fingerprint = "#request",
            ttl = "${sample.idempotency.ttl:24h}")
    public Order placeOrder(String idempotencyKey, OrderRequest request) {
        return orders.placeOrder(request.userId(), request.productId(), request.quantity());
    }
}
