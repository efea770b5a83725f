package com.example.shop;

/** What the user's service calls while it holds the order lock. */
public interface PaymentGateway {

    /** Charges the user for the order. */
    void charge(long userId, long orderId);
}
