package io.github.distlock.sample;

/**
 * A product on sale.
 *
 * @param id its id
 * @param name what it is
 * @param stock items left; never below zero
 * @param fenceToken the fencing token of the last product lock that changed the stock (0 when none has)
 */
public record Product(long id, String name, int stock, long fenceToken) {
}
