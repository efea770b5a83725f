package com.example.shop;

import java.util.concurrent.atomic.AtomicLong;

import io.github.distlock.DistributedLock;
import org.springframework.stereotype.Service;

/** The user's service: one order at a time per user. */
@Service
public class OrderService {

    private final PaymentGateway payments;
    private final AtomicLong orders = new AtomicLong();

    public OrderService(PaymentGateway payments) {
        this.payments = payments;
    }

    /** Places an order and charges it, under the user's lock; a second submit meanwhile fails at once. */
    @DistributedLock(key = "'order:' + #userId")
    public long placeOrder(long userId) {
        long order = orders.incrementAndGet();
        payments.charge(userId, order);
        return order;
    }
}
