package io.github.distlock.aop;

import java.lang.reflect.Method;
import java.util.List;

import io.github.distlock.DistributedLock;
import io.github.distlock.it.LockTestApplication;
import io.github.distlock.it.RedisIntegrationTest;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.util.ReflectionUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every way of naming a key, evaluated by a real call whose Redis key is observed while the lock is held.
 */
@SpringBootTest(classes = {LockTestApplication.class, KeyExpressionTest.Config.class},
        properties = {"shop.region=eu", "shop.lease=750ms", "distlock.key-prefix=app:"})
class KeyExpressionTest extends RedisIntegrationTest {

    @Autowired
    Keys keys;

    @Autowired
    LockOperationSource operations;

    record Order(String userId, Item item) {
    }

    record Item(String sku) {
    }

    @Test
    void parameterByName() {
        assertThat(keys.byName("u1")).containsExactly("app:user:u1");
    }

    @Test
    void parameterByPosition() {
        assertThat(keys.byPosition("a", "b")).containsExactly("app:a:b");
    }

    @Test
    void nestedProperties() {
        assertThat(keys.nested(new Order("u7", new Item("sku-9")))).containsExactly("app:order:u7:sku-9");
    }

    @Test
    void beanReferenceAndPropertyPlaceholder() {
        assertThat(keys.beanAndPlaceholder("x")).containsExactly("app:eu:tenant-3:x");
    }

    @Test
    void rootObject() {
        assertThat(keys.root()).containsExactly("app:root");
    }

    @Test
    void arithmeticInParenthesesStaysArithmetic() {
        assertThat(keys.slot(2, 3)).containsExactly("app:slot:5");
    }

    @Test
    void nullPartFailsBeforeAnyLockIsTaken() {
        int before = keys.calls();
        assertThatThrownBy(() -> keys.byName(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("@DistributedLock on " + Keys.class.getName() + ".byName()")
                .hasMessageContaining("part #userId is null");
        assertThatThrownBy(() -> keys.nested(new Order("u", null)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(".nested()");
        assertThat(keys.calls()).as("the method never ran").isEqualTo(before);
        assertThat(redisCommands.keys("*")).as("no lock such as app:user:null was taken").isEmpty();
    }

    @Test
    void blankPartFailsBeforeAnyLockIsTaken() {
        assertThatThrownBy(() -> keys.byName("  "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("part #userId is blank");
        assertThat(redisCommands.keys("*")).isEmpty();
    }

    /** Arrays and collections are rendered by their elements, not their identity: the same arguments, the same key. */
    @Test
    void arraysAndCollectionsInAPartAreRenderedByTheirElements() {
        assertThat(keys.args("a", 1)).containsExactly("app:args:[a, 1]");
        assertThat(keys.args("a", 1)).as("the same arguments, the same key").containsExactly("app:args:[a, 1]");
        assertThat(keys.list(List.of("x", "y"))).containsExactly("app:list:[x, y]");
    }

    /** A value whose text is its identity would be a new lock per call: refused before locking. */
    @Test
    void partWhoseTextIsAnIdentityFailsBeforeLocking() {
        int before = keys.calls();
        assertThatThrownBy(() -> keys.anything(new Object()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(".anything()")
                .hasMessageContaining("part #value is a java.lang.Object, whose text is its identity");
        assertThat(keys.calls()).as("the method never ran").isEqualTo(before);
        assertThat(redisCommands.keys("*")).isEmpty();
    }

    /** Duration strings in Spring Boot's style, placeholders included, resolved once at startup. */
    @Test
    void durationStrings() {
        LockOperation operation = operations.getOperation(
                ReflectionUtils.findMethod(Keys.class, "durations", String.class), Keys.class);
        assertThat(operation.options().waitTime()).isEqualTo(java.time.Duration.ofSeconds(2));
        assertThat(operation.options().leaseTime()).isEqualTo(java.time.Duration.ofMillis(750));
        assertThat(operation.options().holdAtLeast()).isEqualTo(java.time.Duration.ofMillis(500));
        LockOperation bare = operations.getOperation(
                ReflectionUtils.findMethod(Keys.class, "bareNumberInTimeUnit", String.class), Keys.class);
        assertThat(bare.options().waitTime()).as("a bare number is in timeUnit").isEqualTo(java.time.Duration.ofSeconds(5));
        assertThat(bare.options().leaseTime()).isEqualTo(java.time.Duration.ofMillis(500));
        assertThat(keys.durations("d")).containsExactly("app:dur:d");
    }

    @Test
    void expressionsAreParsedOnceAtStartupNotPerCall() {
        // a method no test calls: parsed when the bean was created, not on a first call
        Method neverCalled = ReflectionUtils.findMethod(Keys.class, "neverCalled", String.class);
        assertThat(operations.isParsed(neverCalled, Keys.class)).as("parsed at startup").isTrue();

        Method method = ReflectionUtils.findMethod(Keys.class, "byName", String.class);
        LockOperation atStartup = operations.getOperation(method, Keys.class);

        keys.byName("a");
        keys.byName("b");

        assertThat(operations.getOperation(method, Keys.class)).isSameAs(atStartup);
        assertThat(atStartup.key().source()).isEqualTo("'user:' + #userId");
    }

    static class Keys {

        private final java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();

        /** Read through the proxy: a field read on the CGLIB proxy would see the proxy's own, never-set field. */
        public int calls() {
            return calls.get();
        }

        @DistributedLock(key = "'user:' + #userId")
        public List<String> byName(String userId) {
            return held();
        }

        @DistributedLock(key = "#p0 + ':' + #a1")
        public List<String> byPosition(String first, String second) {
            return held();
        }

        @DistributedLock(key = "'order:' + #order.userId + ':' + #order.item.sku")
        public List<String> nested(Order order) {
            return held();
        }

        @DistributedLock(key = "'${shop.region}:' + @tenant.id() + ':' + #name")
        public List<String> beanAndPlaceholder(String name) {
            return held();
        }

        @DistributedLock(key = "#root.methodName")
        public List<String> root() {
            return held();
        }

        @DistributedLock(key = "'args:' + #root.args")
        public List<String> args(String a, int b) {
            return held();
        }

        @DistributedLock(key = "'list:' + #items")
        public List<String> list(List<String> items) {
            return held();
        }

        @DistributedLock(key = "'any:' + #value")
        public List<String> anything(Object value) {
            return held();
        }

        @DistributedLock(key = "'dur:' + #id", waitTimeString = "2s", leaseTimeString = "${shop.lease}",
                holdAtLeastString = "PT0.5S")
        public List<String> durations(String id) {
            return held();
        }

        @DistributedLock(key = "'bare:' + #id", waitTimeString = "5", leaseTimeString = "500ms",
                timeUnit = java.util.concurrent.TimeUnit.SECONDS)
        public List<String> bareNumberInTimeUnit(String id) {
            return held();
        }

        @DistributedLock(key = "'never:' + #id")
        public List<String> neverCalled(String id) {
            return held();
        }

        @DistributedLock(key = "'slot:' + (#a + #b)")
        public List<String> slot(int a, int b) {
            return held();
        }

        private List<String> held() {
            calls.incrementAndGet();
            return redisCommands.keys("app:*");
        }
    }

    public static class Tenant {
        public String id() {
            return "tenant-3";
        }
    }

    @TestConfiguration
    static class Config {

        @Bean
        Keys keys() {
            return new Keys();
        }

        @Bean
        Tenant tenant() {
            return new Tenant();
        }
    }
}
