package io.github.distlock.cache;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.springframework.cache.interceptor.SimpleKey;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class CacheEntryLockKeysTest {

    record ProductKey(long id, String region) {
    }

    static final class NoText {
    }

    @Test
    void aPlainNameAndKeyAreWrittenAsTheyAre() {
        assertThat(SingleFlightCache.lockKey("products", 42L)).isEqualTo("cache:products:42");
        assertThat(SingleFlightCache.lockKey("product-details", "sku:ab_1/x@eu=2,3"))
                .isEqualTo("cache:product-details:sku:ab_1/x@eu=2,3");
    }

    @Test
    void oddCharactersLongKeysAndOddNamesAreHashedToOneFixedLengthKey() {
        String braces = SingleFlightCache.lockKey("products", "{tag}");
        String spaces = SingleFlightCache.lockKey("products", new SimpleKey(1, "a b"));
        String longKey = SingleFlightCache.lockKey("products", "x".repeat(300));
        String oddName = SingleFlightCache.lockKey("prod ucts", 1);

        assertThat(List.of(braces, spaces, longKey, oddName)).allSatisfy(key -> assertThat(key).matches("cache#[0-9a-f]{64}"));
        assertThat(SingleFlightCache.lockKey("products", "{tag}")).as("the same on every call").isEqualTo(braces);
        assertThat(SingleFlightCache.lockKey("products", new ProductKey(7, "eu")))
                .isEqualTo(SingleFlightCache.lockKey("products", new ProductKey(7, "eu")))
                .isNotEqualTo(SingleFlightCache.lockKey("products", new ProductKey(7, "us")));
    }

    @Test
    void whereTheNameEndsAndTheKeyBeginsCannotMakeTwoEntriesShareALock() {
        assertThat(SingleFlightCache.lockKey("a:b", "c")).isNotEqualTo(SingleFlightCache.lockKey("a", "b:c"));
        assertThat(SingleFlightCache.lockKey("a b", "c d")).isNotEqualTo(SingleFlightCache.lockKey("a", "b c d"));
    }

    @Test
    void anArrayKeyIsItsElements() {
        assertThat(SingleFlightCache.lockKey("products", new int[] {1, 2}))
                .isEqualTo(SingleFlightCache.lockKey("products", new int[] {1, 2}))
                .isEqualTo(SingleFlightCache.lockKey("products", "[1, 2]"));
    }

    @Test
    void aKeyWhoseTextIsAnObjectIdentityIsRefusedNamingTheCache() {
        assertThatIllegalArgumentException().isThrownBy(() -> SingleFlightCache.lockKey("products", new NoText()))
                .withMessageContaining("Cache 'products'")
                .withMessageContaining(NoText.class.getName())
                .withMessageContaining("no toString() of its own");
    }
}
