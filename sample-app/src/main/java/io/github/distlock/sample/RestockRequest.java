package io.github.distlock.sample;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;

/**
 * The body of {@code POST /api/products/{id}/restock}.
 *
 * @param quantity items to add
 */
public record RestockRequest(@NotNull @Min(1) @Max(1_000_000) Integer quantity) {
}
