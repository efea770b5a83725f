package io.github.distlock.sample;

import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Size;

/**
 * The body of {@code POST /api/products}.
 *
 * @param name what it is
 * @param stock items on sale
 */
public record NewProductRequest(@NotBlank @Size(max = 200) String name, @NotNull @Min(0) Integer stock) {
}
