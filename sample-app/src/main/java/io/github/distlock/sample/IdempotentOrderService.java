package io.github.distlock.sample;

import io.github.distlock.idempotent.Idempotent;
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
     * {@link io.github.distlock.idempotent.IdempotencyKeyReusedException} (422). A request that failed (sold out, say)
     * stores nothing: its retry runs again.
     */
    @Idempotent(key = "'order-request:' + #idempotencyKey", fingerprint = "#request",
            ttl = "${sample.idempotency.ttl:24h}")
    public Order placeOrder(String idempotencyKey, OrderRequest request) {
        return orders.placeOrder(request.userId(), request.productId(), request.quantity());
    }
}
