package io.github.distlock.idempotency;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;
import org.springframework.core.ResolvableType;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * A fingerprint tells two requests apart exactly when they differ, keeps answering the marks already in Redis, and is
 * computed for any value a request can carry: on a real redis-server through {@link IdempotencyTemplate}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RequestFingerprintTellsDistinctRequestsApartTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private RedissonClient redisson;
    private IdempotencyTemplate template;
    private final JsonMapper json = JsonMapper.builder().build();

    record Charge(String account, long cents) {
    }

    record Refund(String account, long cents) {
    }

    record Transfer(String id, BigDecimal amount) {
    }

    /** An amount of money that is a {@link Number}: its value in cents, and a currency its text leaves out. */
    static final class Money extends Number {

        private final long cents;
        private final String currency;

        Money(long cents, String currency) {
            this.cents = cents;
            this.currency = currency;
        }

        @Override
        public int intValue() {
            return (int) cents;
        }

        @Override
        public long longValue() {
            return cents;
        }

        @Override
        public float floatValue() {
            return cents;
        }

        @Override
        public double doubleValue() {
            return cents;
        }

        @Override
        public String toString() {
            return Long.toString(cents);
        }
    }

    /** A {@link Number} whose text is not a number. */
    static final class Price extends Number {

        private final long cents;

        Price(long cents) {
            this.cents = cents;
        }

        @Override
        public int intValue() {
            return (int) cents;
        }

        @Override
        public long longValue() {
            return cents;
        }

        @Override
        public float floatValue() {
            return cents;
        }

        @Override
        public double doubleValue() {
            return cents;
        }

        @Override
        public String toString() {
            return "EUR " + cents / 100 + "." + String.format("%02d", cents % 100);
        }
    }

    @BeforeAll
    void start() {
        Config config = new Config();
        config.useSingleServer().setAddress(redis.uri());
        redisson = Redisson.create(config);
        template = new IdempotencyTemplate(new DefaultLockTemplate(new RedissonLockProvider(redisson), "lock:",
                Duration.ZERO, null, List.of()), new RedissonIdempotencyStore(redisson), json, Duration.ofSeconds(5));
    }

    @AfterAll
    void stop() {
        if (redisson != null) {
            redisson.shutdown();
        }
    }

    /** A refund sent with the key of a charge is another request: it must not be answered with the charge's result. */
    @Test
    void aRequestOfAnotherTypeWithTheSameFieldsIsNotTheSameRequest() {
        String key = "money:" + UUID.randomUUID();
        AtomicInteger runs = new AtomicInteger();
        assertThat(call(key, new Charge("acc-1", 500), () -> "charged " + runs.incrementAndGet()))
                .isEqualTo("charged 1");
        assertThatThrownBy(() -> call(key, new Refund("acc-1", 500), () -> "refunded " + runs.incrementAndGet()))
                .isInstanceOf(IdempotencyKeyReusedException.class);
    }

    /** A text fingerprint and a value fingerprint are two encodings: no text may stand for a value. */
    @Test
    void aTextFingerprintNeverMatchesAValueFingerprint() {
        String key = "text:" + UUID.randomUUID();
        assertThat(call(key, 1, () -> "one")).isEqualTo("one");
        assertThatThrownBy(() -> call(key, "\u0000canonical:d1;", () -> "text"))
                .isInstanceOf(IdempotencyKeyReusedException.class);
    }

    /**
     * A mark written before the canonical fingerprint (SHA-256 of the request's JSON, object fields sorted) must still
     * answer the retry of its request, for as long as it lives: an upgrade must not turn retries into key-reuse errors.
     */
    @Tag("open-defect")
    @Test
    void aMarkStoredBeforeTheUpgradeStillAnswersTheRetryOfItsRequest() throws Exception {
        String key = "upgrade:" + UUID.randomUUID();
        Transfer request = new Transfer("t-1", new BigDecimal("12.50"));
        ObjectNode mark = json.createObjectNode();
        mark.put("outcome", "RETURNED");
        mark.put("fingerprint", HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                .digest(json.writeValueAsBytes(sorted(json.valueToTree(request))))));
        mark.put("type", json.getTypeFactory().constructType(String.class).toCanonical());
        mark.put("value", "paid before the upgrade");
        redisson.getBucket(template.markKey(key), StringCodec.INSTANCE).set(json.writeValueAsString(mark),
                Duration.ofHours(24));

        AtomicInteger runs = new AtomicInteger();
        assertThatCode(() -> assertThat(call(key, request, () -> "paid again " + runs.incrementAndGet()))
                .isEqualTo("paid before the upgrade")).doesNotThrowAnyException();
        assertThat(runs).hasValue(0);
    }

    /** The largest exponent a BigDecimal can have is a number too: fingerprinted, or refused naming the fingerprint. */
    @Test
    void anAmountAtTheLargestExponentIsFingerprintedOrRefusedWithAClearError() {
        String key = "huge:" + UUID.randomUUID();
        Transfer request = new Transfer("t-2", new BigDecimal("1E+2147483647"));
        try {
            assertThat(call(key, request, () -> "ran")).isEqualTo("ran");
        }
        catch (IllegalArgumentException refused) {
            assertThat(refused).hasMessageContaining("fingerprint");
        }
    }

    /**
     * A short number from the client ({@code 1e300000000}, 11 characters of JSON) must not cost the server hundreds of
     * megabytes and seconds to fingerprint: its encoding must not grow with the exponent.
     */
    @Test
    void anAmountWithALargeExponentIsFingerprintedWithoutWritingOutItsDigits() {
        String key = "large:" + UUID.randomUUID();
        // as the application's Jackson reads it from a request body
        Transfer request = json.readValue("{\"id\":\"t-3\",\"amount\":1e300000000}", Transfer.class);
        assertThat(request.amount()).isEqualByComparingTo(new BigDecimal("1e300000000"));
        assertTimeoutPreemptively(Duration.ofSeconds(1), () -> call(key, request, () -> "ran"));
    }

    /** Five euros and five dollars are two requests, though both are the number 500: the currency is a field. */
    @Test
    void aNumberTypeIsComparedByAllItsFieldsNotOnlyItsText() {
        String key = "money-number:" + UUID.randomUUID();
        assertThat(call(key, new Money(500, "EUR"), () -> "paid EUR")).isEqualTo("paid EUR");
        assertThatThrownBy(() -> call(key, new Money(500, "USD"), () -> "paid USD"))
                .isInstanceOf(IdempotencyKeyReusedException.class);
    }

    /** A Number whose text is not a number: fingerprinted by its fields, or refused naming the fingerprint. */
    @Test
    void aNumberWhoseTextIsNotANumberIsFingerprintedOrRefusedWithAClearError() {
        String key = "price:" + UUID.randomUUID();
        try {
            assertThat(call(key, new Price(500), () -> "ran")).isEqualTo("ran");
        }
        catch (IllegalArgumentException refused) {
            assertThat(refused).isNotInstanceOf(NumberFormatException.class).hasMessageContaining("fingerprint");
        }
    }

    private String call(String key, Object fingerprint, java.util.function.Supplier<String> body) {
        return template.execute(key, IdempotencyOptions.ttl(Duration.ofMinutes(1)).withFingerprint(fingerprint),
                ResolvableType.forClass(String.class), body::get);
    }

    /** The object fields sorted by name, as fingerprints were computed before the canonical encoding. */
    private JsonNode sorted(JsonNode node) {
        if (node instanceof ObjectNode object) {
            ObjectNode copy = json.createObjectNode();
            List<String> names = new ArrayList<>(object.propertyNames());
            Collections.sort(names);
            for (String name : names) {
                copy.set(name, sorted(object.get(name)));
            }
            return copy;
        }
        if (node instanceof ArrayNode array) {
            ArrayNode copy = json.createArrayNode();
            for (JsonNode element : array) {
                copy.add(sorted(element));
            }
            return copy;
        }
        return node;
    }
}
