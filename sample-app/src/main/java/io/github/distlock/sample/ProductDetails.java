package io.github.distlock.sample;

import java.io.Serializable;

/**
 * What a product is, apart from its stock: the part of a product page that rarely changes and is read on every
 * visit, cached as {@code GET /api/products/{id}/details} serves it.
 *
 * @param id its id
 * @param name what it is
 */
public record ProductDetails(long id, String name) implements Serializable {
}
