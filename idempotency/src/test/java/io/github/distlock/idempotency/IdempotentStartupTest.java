package io.github.distlock.idempotency;

import java.util.concurrent.CompletableFuture;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.idempotency.autoconfigure.IdempotencyAutoConfiguration;
import io.github.distlock.spi.LockProvider;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Mistakes in {@link Idempotent} fail the startup, naming the method; no Redis is needed to find them. The lock
 * provider here never grants a lock: nothing is called.
 */
class IdempotentStartupTest {

    private static final LockProvider NO_LOCKS = request -> CompletableFuture.completedFuture(null);

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DistlockAutoConfiguration.class,
                    IdempotencyAutoConfiguration.class))
            .withBean(LockProvider.class, () -> NO_LOCKS)
            .withBean(IdempotencyStore.class, NoStore::new);

    @Test
    void aKeyNamingAParameterTheMethodLacksFailsNamingTheMethod() {
        runner.withBean(UnknownParameter.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining("Invalid @Idempotent on " + UnknownParameter.class.getName() + ".pay(): key "
                        + "'#orderId' uses [#orderId], which the method does not have; its parameters are [#id]"));
    }

    @Test
    void anObjectResultFailsNamingTheMethod() {
        runner.withBean(ObjectResult.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining("Invalid @Idempotent on " + ObjectResult.class.getName()
                        + ".pay(): the method returns Object"));
    }

    @Test
    void anAsynchronousResultFailsNamingTheMethod() {
        runner.withBean(AsyncResult.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining("Invalid @Idempotent on " + AsyncResult.class.getName()
                        + ".pay(): the method returns java.util.concurrent.CompletableFuture"));
    }

    @Test
    void workStillToRunAsTheResultFailsNamingTheMethod() {
        runner.withBean(SupplierResult.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining("Invalid @Idempotent on " + SupplierResult.class.getName()
                        + ".pay(): the method returns java.util.function.Supplier, work that runs after the method "
                        + "returned"));
        runner.withBean(RunnableResult.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining("Invalid @Idempotent on " + RunnableResult.class.getName()
                        + ".pay(): the method returns java.lang.Runnable, work that runs after the method returned"));
    }

    @Test
    void aWaitTimeWithRefuseAndABadDurationFail() {
        runner.withBean(RefuseWithWait.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining(RefuseWithWait.class.getName() + ".pay(): waitTime = \"5s\" is set "
                        + "but whileRunning = REFUSE never waits"));
        runner.withBean(BadTtl.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining(BadTtl.class.getName() + ".pay(): ttl = \"soon\" is not a duration"));
    }

    @Test
    void withoutAStoreOnlyAnApplicationUsingIdempotentFails() {
        ApplicationContextRunner noStore = new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DistlockAutoConfiguration.class,
                        IdempotencyAutoConfiguration.class))
                .withBean(LockProvider.class, () -> NO_LOCKS);
        noStore.run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(IdempotencyTemplate.class));
        noStore.withBean(Valid.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining("@Idempotent on " + Valid.class.getName() + ".pay() in bean")
                .hasMessageContaining("cannot run: there is no store for its marks (no IdempotencyStore bean)"));
    }

    @Test
    void aFingerprintOfAParameterWithNoContentFailsNamingTheMethod() {
        runner.withBean(IdentityFingerprint.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining("Invalid @Idempotent on " + IdentityFingerprint.class.getName() + ".pay(): "
                        + "fingerprint = \"#handle\" cannot be fingerprinted: " + Handle.class.getName()
                        + " has no instance fields: two requests of it differ only by identity"));
        runner.withBean(JdkFingerprint.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining(JdkFingerprint.class.getName() + ".pay(): fingerprint = \"#p1\" cannot be "
                        + "fingerprinted: java.io.FileInputStream is not a value"));
        runner.withBean(UnknownFingerprintParameter.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining(UnknownFingerprintParameter.class.getName() + ".pay(): fingerprint = "
                        + "\"#body\" names no parameter of the method (its parameters: id, request)"));
        runner.withBean(BadFingerprintSyntax.class).run(context -> assertThat(configurationFailure(context))
                .hasMessageContaining(BadFingerprintSyntax.class.getName() + ".pay(): fingerprint = \"#request.\" "
                        + "is not a valid SpEL expression"));
    }

    @Test
    void aValidAnnotationStarts() {
        runner.withBean(Valid.class).run(context -> assertThat(context).hasNotFailed()
                .hasSingleBean(IdempotencyTemplate.class));
    }

    /** The report Spring Boot prints: distlock's exception in the failure's cause chain. */
    private static Throwable configurationFailure(org.springframework.boot.test.context.assertj.AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        Throwable failure = context.getStartupFailure();
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof DistlockConfigurationException) {
                return cause;
            }
        }
        throw new AssertionError("no DistlockConfigurationException in", failure);
    }

    static class UnknownParameter {
        @Idempotent(key = "#orderId")
        public String pay(String id) {
            return id;
        }
    }

    static class ObjectResult {
        @Idempotent(key = "#id")
        public Object pay(String id) {
            return id;
        }
    }

    static class AsyncResult {
        @Idempotent(key = "#id")
        public CompletableFuture<String> pay(String id) {
            return CompletableFuture.completedFuture(id);
        }
    }

    static class SupplierResult {
        @Idempotent(key = "#id")
        public java.util.function.Supplier<String> pay(String id) {
            return () -> id;
        }
    }

    static class RunnableResult {
        @Idempotent(key = "#id")
        public Runnable pay(String id) {
            return () -> { };
        }
    }

    static class RefuseWithWait {
        @Idempotent(key = "#id", whileRunning = WhileRunning.REFUSE, waitTime = "5s")
        public String pay(String id) {
            return id;
        }
    }

    static class BadTtl {
        @Idempotent(key = "#id", ttl = "soon")
        public String pay(String id) {
            return id;
        }
    }

    /** Nothing but identity to compare. */
    static final class Handle {
    }

    static class IdentityFingerprint {
        @Idempotent(key = "#id", fingerprint = "#handle")
        public String pay(String id, Handle handle) {
            return id;
        }
    }

    static class JdkFingerprint {
        @Idempotent(key = "#id", fingerprint = "#p1")
        public String pay(String id, java.io.FileInputStream body) {
            return id;
        }
    }

    static class UnknownFingerprintParameter {
        @Idempotent(key = "#id", fingerprint = "#body")
        public String pay(String id, String request) {
            return id;
        }
    }

    static class BadFingerprintSyntax {
        @Idempotent(key = "#id", fingerprint = "#request.")
        public String pay(String id, String request) {
            return id;
        }
    }

    static class Valid {
        @Idempotent(key = "'pay:' + #id", ttl = "1h")
        public String pay(String id) {
            return id;
        }
    }

    /** Never reached: the contexts above are only started. */
    static final class NoStore implements IdempotencyStore {
        @Override
        public String get(String key) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void put(String key, String mark, java.time.Duration ttl) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean delete(String key) {
            throw new UnsupportedOperationException();
        }
    }
}
