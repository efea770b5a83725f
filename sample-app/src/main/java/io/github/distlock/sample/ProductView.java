package io.github.distlock.sample;

/**
 * A product with what was sold of it, as {@code GET /api/products/{id}} shows it.
 *
 * @param id its id
 * @param name what it is
 * @param stock items left
 * @param sold items in orders for it
 * @param fenceToken the fencing token of the last product lock that changed the stock
 */
public record ProductView(long id, String name, int stock, long sold, long fenceToken) {
}
