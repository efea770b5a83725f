package com.example.failures;

/** What the order service calls while it holds the order's lock; the tests replace what it does. */
public interface Warehouse {

    void ship(long orderId);
}
