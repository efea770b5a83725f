package io.github.distlock.sample;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Positive;

/**
 * The body of {@code POST /api/orders}.
 *
 * @param userId who orders
 * @param productId what
 * @param quantity how many items, 1 to 10
 */
public record OrderRequest(@NotNull @Positive Long userId, @NotNull @Positive Long productId,
        @NotNull @Min(1) @Max(10) Integer quantity) {
}
