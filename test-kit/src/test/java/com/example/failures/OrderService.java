package com.example.failures;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockType;
import org.springframework.stereotype.Service;

/** The user's service: each method asks for what it wants when the lock can't be had. */
@Service
public class OrderService {

    private final Warehouse warehouse;
    private final AtomicInteger placed = new AtomicInteger();
    private final AtomicInteger fallbacks = new AtomicInteger();

    public OrderService(Warehouse warehouse) {
        this.warehouse = warehouse;
    }

    /** Fails with LockAcquisitionException when another caller holds the order. */
    @DistributedLock(key = "'order:' + #orderId")
    public String placeOrder(long orderId) {
        placed.incrementAndGet();
        warehouse.ship(orderId);
        return "placed " + orderId;
    }

    /** A nested call on the order's lock: re-enters it while it is still this caller's. */
    @DistributedLock(key = "'order:' + #orderId")
    public String cancelOrder(long orderId) {
        return "cancelled " + orderId;
    }

    /** A job on every instance: skipped where another instance runs it. */
    @DistributedLock(key = "'report:' + #day", skipIfLocked = true)
    public String dailyReport(String day) {
        placed.incrementAndGet();
        return "report " + day;
    }

    /** Queued for later when the order is busy. */
    @DistributedLock(key = "'order:' + #orderId", fallbackMethod = "queueOrder")
    public String submitOrder(long orderId) {
        placed.incrementAndGet();
        return "submitted " + orderId;
    }

    public String queueOrder(long orderId, LockAcquisitionException busy) {
        fallbacks.incrementAndGet();
        return "queued " + orderId;
    }

    /** How many locked method bodies ran (through the proxy: its fields are not the service's). */
    public int bodiesRun() {
        return placed.get();
    }

    public int fallbacksRun() {
        return fallbacks.get();
    }

    public void resetCounts() {
        placed.set(0);
        fallbacks.set(0);
    }

    /** Waits up to 100 ms for the stock's lock. */
    @DistributedLock(key = "'stock:' + #productId", waitTime = 100, timeUnit = TimeUnit.MILLISECONDS)
    public String reserve(long productId) {
        placed.incrementAndGet();
        return "reserved " + productId;
    }

    /** A fenced FAIR lock on a fixed lease of 300 ms. */
    @DistributedLock(key = "'refund:' + #orderId", type = LockType.FAIR, fenced = true, leaseTime = 300)
    public String refund(long orderId) {
        warehouse.ship(orderId);
        return "refunded " + orderId;
    }
}
