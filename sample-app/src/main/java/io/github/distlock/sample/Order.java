package io.github.distlock.sample;

import java.time.Instant;

/**
 * A placed order.
 *
 * @param id its id
 * @param userId who ordered
 * @param productId what
 * @param quantity how many items
 * @param createdAt when
 */
public record Order(long id, long userId, long productId, int quantity, Instant createdAt) {
}
