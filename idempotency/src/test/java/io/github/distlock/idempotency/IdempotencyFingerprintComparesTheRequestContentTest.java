package io.github.distlock.idempotency;

import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.redisson.RedissonLockProvider;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The promise of a fingerprint: two requests are the same request exactly when their content is equal: fields a
 * {@code toString()} leaves out count, maps match whatever their order, numbers compare by value. On a real
 * redis-server through {@link IdempotencyTemplate}, and the canonical encoding value by value.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class IdempotencyFingerprintComparesTheRequestContentTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private RedissonClient redisson;
    private IdempotencyTemplate template;
    private final JsonMapper json = JsonMapper.builder().build();

    /** Prints only its id: the amount and the note are left out of its text. */
    record Transfer(String id, BigDecimal amount, String note) {

        @Override
        public String toString() {
            return "Transfer[" + id + "]";
        }
    }

    /** A bean with private fields and a toString of its id only. */
    static final class Order {

        private final String id;
        private final List<String> items;

        Order(String id, List<String> items) {
            this.id = id;
            this.items = items;
        }

        @Override
        public String toString() {
            return "Order " + id;
        }
    }

    /** Nothing to compare but identity. */
    static final class Token {
    }

    static final class Node {

        Object next;
    }

    enum Currency {
        EUR, USD
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

    @Test
    void aRequestWhoseTextLeavesOutTheAmountIsNotTakenForTheSameRequest() {
        String key = "transfer:" + UUID.randomUUID();
        String first = call(key, new Transfer("t1", new BigDecimal("10.00"), "rent"));
        assertThat(first).isEqualTo("ran 10.00");
        assertThatThrownBy(() -> call(key, new Transfer("t1", new BigDecimal("99.00"), "rent")))
                .isInstanceOf(IdempotencyKeyReusedException.class)
                .hasMessage("Idempotency key '" + key + "' was used before for a different request (its fingerprint "
                        + "differs); use a new key for a new request");
        assertThatThrownBy(() -> call(key, new Transfer("t1", new BigDecimal("10.00"), "other note")))
                .isInstanceOf(IdempotencyKeyReusedException.class);
        // the same content is the same request: replayed
        assertThat(call(key, new Transfer("t1", new BigDecimal("10.0"), "rent"))).isEqualTo("ran 10.00");
    }

    @Test
    void aBeanIsComparedByItsFieldsNotItsText() {
        String key = "order:" + UUID.randomUUID();
        call(key, new Order("o1", List.of("apple")));
        assertThatThrownBy(() -> call(key, new Order("o1", List.of("pear"))))
                .isInstanceOf(IdempotencyKeyReusedException.class);
        assertThat(call(key, new Order("o1", new ArrayList<>(List.of("apple"))))).startsWith("ran");
    }

    @Test
    void aReorderedMapIsTheSameRequest() {
        String key = "map:" + UUID.randomUUID();
        Map<String, Object> first = new LinkedHashMap<>();
        first.put("amount", 5);
        first.put("currency", "EUR");
        first.put("lines", List.of(Map.of("sku", "a"), Map.of("sku", "b")));
        Map<String, Object> reordered = new LinkedHashMap<>();
        reordered.put("lines", List.of(Map.of("sku", "a"), Map.of("sku", "b")));
        reordered.put("currency", "EUR");
        reordered.put("amount", 5L);
        String result = call(key, first);
        assertThat(call(key, reordered)).isEqualTo(result);
        // lists keep their order
        Map<String, Object> swapped = new TreeMap<>(first);
        swapped.put("lines", List.of(Map.of("sku", "b"), Map.of("sku", "a")));
        assertThatThrownBy(() -> call(key, swapped)).isInstanceOf(IdempotencyKeyReusedException.class);
    }

    @Test
    void theEncodingIsCanonical() {
        // numbers by value, whatever their class and scale
        assertThat(fp(7)).isEqualTo(fp(7L)).isEqualTo(fp(7.0)).isEqualTo(fp(new BigDecimal("7.000")))
                .isEqualTo(fp(new java.math.BigInteger("7"))).isNotEqualTo(fp(8));
        assertThat(fp(new BigDecimal("0.00"))).isEqualTo(fp(0));
        assertThat(fp(Long.MAX_VALUE)).isNotEqualTo(fp(Long.MAX_VALUE - 1));
        assertThat(fp(Double.NaN)).isEqualTo(fp(Double.NaN)).isNotEqualTo(fp(Double.POSITIVE_INFINITY));
        // sets by content, lists and arrays in order
        assertThat(fp(new LinkedHashSet<>(List.of("a", "b")))).isEqualTo(fp(new LinkedHashSet<>(List.of("b", "a"))));
        assertThat(fp(List.of("a", "b"))).isNotEqualTo(fp(List.of("b", "a")));
        assertThat(fp(new int[] {1, 2})).isEqualTo(fp(List.of(1, 2))).isNotEqualTo(fp(new int[] {2, 1}));
        assertThat(fp(new byte[] {1, 2})).isEqualTo(fp(new byte[] {1, 2})).isNotEqualTo(fp(new byte[] {2, 1}));
        // nulls count, and differ from the text "null" and from absent entries
        Map<String, Object> withNull = new HashMap<>();
        withNull.put("note", null);
        assertThat(fp(withNull)).isNotEqualTo(fp(Map.of("note", "null"))).isNotEqualTo(fp(Map.of()));
        assertThat(fp(new Transfer("t", null, null))).isNotEqualTo(fp(new Transfer("t", BigDecimal.ZERO, null)));
        assertThat(fp(Optional.empty())).isEqualTo(fp(Optional.empty()));
        // enums, dates
        assertThat(fp(Currency.EUR)).isNotEqualTo(fp(Currency.USD)).isNotEqualTo(fp("EUR"));
        Instant now = Instant.parse("2026-11-27T18:00:00Z");
        assertThat(fp(Date.from(now))).isEqualTo(fp(Date.from(now)));
        assertThat(fp(LocalDate.of(2026, 1, 2))).isNotEqualTo(fp(LocalDate.of(2026, 2, 1)));
        assertThat(fp(now)).isNotEqualTo(fp(now.plusMillis(1)));
        // nested values, and strings that would run into each other
        assertThat(fp(List.of("ab", "c"))).isNotEqualTo(fp(List.of("a", "bc")));
        assertThat(fp(Map.of("a", List.of(new Transfer("x", BigDecimal.ONE, "n")))))
                .isEqualTo(fp(Map.of("a", List.of(new Transfer("x", new BigDecimal("1.0"), "n")))));
        // deterministic: the same value twice, the same bytes
        assertThat(fp(Arrays.asList(1, null, "x"))).isEqualTo(fp(Arrays.asList(1, null, "x")));
    }

    @Test
    void whatHasNoContentOrRefersToItselfIsRefusedAtTheCall() {
        assertThatThrownBy(() -> fp(new Token()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("fingerprint cannot be fingerprinted: " + Token.class.getName()
                        + " has no instance fields: two requests of it differ only by identity");
        Node node = new Node();
        node.next = List.of(node);
        assertThatThrownBy(() -> fp(node)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("fingerprint.next[0] refers to itself (a " + Node.class.getName() + " inside itself), so "
                        + "it has no finite fingerprint");
        assertThatThrownBy(() -> fp(Map.of("in", new Thread()))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("fingerprint[in] cannot be fingerprinted: java.lang.Thread is not a value (no content "
                        + "distlock can compare, only its identity)");
        // refused before the code runs, storing nothing
        String key = "token:" + UUID.randomUUID();
        assertThatThrownBy(() -> call(key, new Token())).isInstanceOf(IllegalArgumentException.class);
        assertThat(redisson.getKeys().countExists("lock:idempotent-mark:" + key)).isZero();
    }

    private String fp(Object value) {
        return RequestFingerprint.of(value, json);
    }

    private String call(String key, Object fingerprint) {
        return template.execute(key, IdempotencyOptions.ttl(Duration.ofMinutes(1)).withFingerprint(fingerprint),
                org.springframework.core.ResolvableType.forClass(String.class),
                () -> "ran " + ((fingerprint instanceof Transfer transfer) ? transfer.amount() : fingerprint.hashCode()));
    }
}
