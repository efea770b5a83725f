package io.github.distlock.idempotency;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.interceptor.TransactionAspectSupport;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * One instance of a payment application for the tests of {@link Idempotent} inside transactions: its own Spring
 * context, Redis client and connection pool, on the Redis server and the database it shares with other instances.
 * The probes the tests trust are kept outside the library: a count of body runs per request id (shared by the
 * instances of one JVM, as one count per request) and the rows of the {@code payment} table.
 */
final class PaymentsApplication implements AutoCloseable {

    /** Body runs per request id, across instances. */
    static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();

    private final ConfigurableApplicationContext context;

    PaymentsApplication(String redisUri, String jdbcUrl, String... properties) {
        String[] all = new String[properties.length + 3];
        all[0] = "redis.uri=" + redisUri;
        all[1] = "payments.jdbc-url=" + jdbcUrl;
        all[2] = "spring.main.banner-mode=off";
        System.arraycopy(properties, 0, all, 3, properties.length);
        context = new SpringApplicationBuilder(Application.class).web(WebApplicationType.NONE).properties(all).run();
        jdbc().execute("CREATE TABLE IF NOT EXISTS payment (request_id VARCHAR(200) NOT NULL, amount DECIMAL(19, 4), "
                + "note VARCHAR(200), run INT NOT NULL)");
    }

    Payments payments() {
        return context.getBean(Payments.class);
    }

    Checkout checkout() {
        return context.getBean(Checkout.class);
    }

    Orders orders() {
        return context.getBean(Orders.class);
    }

    FaultyStore store() {
        return context.getBean(FaultyStore.class);
    }

    RedissonClient redisson() {
        return context.getBean(RedissonClient.class);
    }

    JdbcTemplate jdbc() {
        return context.getBean(JdbcTemplate.class);
    }

    /** Rows the body of {@code requestId} left in the database. */
    int rows(String requestId) {
        return jdbc().queryForObject("SELECT COUNT(*) FROM payment WHERE request_id = ?", Integer.class, requestId);
    }

    static int runs(String requestId) {
        AtomicInteger runs = RUNS.get(requestId);
        return (runs != null) ? runs.get() : 0;
    }

    boolean exists(String redisKey) {
        return redisson().getKeys().countExists(redisKey) == 1;
    }

    @Override
    public void close() {
        context.close();
    }

    /** What a payment callback carries; its text leaves out all but the id, as a log-friendly toString often does. */
    record PaymentRequest(String id, BigDecimal amount, Map<String, String> details, String note) {

        @Override
        public String toString() {
            return "PaymentRequest[" + id + "]";
        }
    }

    /** What a settled payment returns: {@code run} is the body run that produced it. */
    record Receipt(String requestId, long cents, int run) {
    }

    /** A final outcome: stored, duplicates get {@link DuplicateRequestException}. */
    static final class DeclinedException extends RuntimeException {

        DeclinedException(String message) {
            super(message);
        }
    }

    /** The payment service: {@code @Idempotent}, inserting a row in whatever transaction is active. */
    static class Payments {

        private final JdbcTemplate jdbc;

        /** Failures the body throws for a request id, once. */
        private final Map<String, RuntimeException> failNext = new ConcurrentHashMap<>();

        Payments(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @Idempotent(key = "'pay:' + #request.id", fingerprint = "#request", storeFailureFor = DeclinedException.class)
        public Receipt settle(PaymentRequest request) {
            return run(request);
        }

        @Idempotent(key = "'pay:' + #request.id", fingerprint = "#request", storeFailureFor = DeclinedException.class,
                whileRunning = WhileRunning.REFUSE)
        public Receipt settleRefusing(PaymentRequest request) {
            return run(request);
        }

        @Idempotent(key = "'pay:' + #request.id", fingerprint = "#request", storeFailureFor = DeclinedException.class)
        @Transactional(propagation = Propagation.REQUIRES_NEW)
        public Receipt settleInOwnTransaction(PaymentRequest request) {
            return run(request);
        }

        /** The next body run for {@code requestId} throws {@code failure} (through the proxy: a method, not a field). */
        public void failNext(String requestId, RuntimeException failure) {
            failNext.put(requestId, failure);
        }

        /** Forgets a failure that no body run used. */
        public void clearFailure(String requestId) {
            failNext.remove(requestId);
        }

        private Receipt run(PaymentRequest request) {
            int run = RUNS.computeIfAbsent(request.id(), id -> new AtomicInteger()).incrementAndGet();
            RuntimeException failure = failNext.remove(request.id());
            if (failure != null) {
                throw failure;
            }
            jdbc.update("INSERT INTO payment (request_id, amount, note, run) VALUES (?, ?, ?, ?)", request.id(),
                    request.amount(), request.note(), run);
            return new Receipt(request.id(), (request.amount() != null) ? request.amount().movePointRight(2).longValue() : 0, run);
        }
    }

    /** An idempotent order in its own transaction, paying through the idempotent payment service inside it. */
    static class Orders {

        private final Payments payments;

        Orders(Payments payments) {
            this.payments = payments;
        }

        @Idempotent(key = "'order:' + #request.id", fingerprint = "#request")
        @Transactional
        public Receipt place(PaymentRequest request, boolean failAfterPaying) {
            Receipt receipt = payments.settle(request);
            if (failAfterPaying) {
                throw new IllegalStateException("order " + request.id() + " failed after paying");
            }
            return receipt;
        }
    }

    /** The caller: its own transaction around the idempotent call, and what it does after the call returned. */
    static class Checkout {

        /** What happens inside the caller's transaction after the idempotent call returned. */
        enum After {
            COMMIT, THROW, SET_ROLLBACK_ONLY, FAIL_COMMIT
        }

        @Transactional
        public Receipt pay(Payments payments, PaymentRequest request, After after, Runnable beforeCommit) {
            Receipt receipt = payments.settle(request);
            beforeCommit.run();
            switch (after) {
                case THROW -> throw new IllegalStateException("checkout of " + request.id() + " failed after paying");
                case SET_ROLLBACK_ONLY -> TransactionAspectSupport.currentTransactionStatus().setRollbackOnly();
                case FAIL_COMMIT -> TransactionSynchronizationManager.registerSynchronization(
                        new TransactionSynchronization() {
                            @Override
                            public void beforeCommit(boolean readOnly) {
                                throw new IllegalStateException("commit of " + request.id() + " failed");
                            }
                        });
                case COMMIT -> {
                }
            }
            return receipt;
        }

        @Transactional
        public Receipt payTwice(Payments payments, PaymentRequest request) {
            Receipt first = payments.settle(request);
            Receipt second = payments.settle(request);
            if (!first.equals(second)) {
                throw new IllegalStateException("second call in one transaction got " + second + ", not " + first);
            }
            return second;
        }

        @Transactional
        public Receipt payInOwnTransactionThenThrow(Payments payments, PaymentRequest request) {
            payments.settleInOwnTransaction(request);
            throw new IllegalStateException("checkout of " + request.id() + " failed after paying");
        }

        /** A retry loop inside one transaction: a failed call is tried once more. */
        @Transactional
        public Receipt payRetrying(Payments payments, PaymentRequest request) {
            try {
                return payments.settle(request);
            }
            catch (IllegalStateException firstFailed) {
                return payments.settle(request);
            }
        }

        /** Another library's callback, registered before the call, whose afterCommit fails. */
        @Transactional
        public Receipt payBesideAFailingAfterCommit(Payments payments, PaymentRequest request) {
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCommit() {
                    throw new IllegalStateException("afterCommit of another library failed for " + request.id());
                }
            });
            return payments.settle(request);
        }

        /** A synchronization scope without a transaction: the body's writes commit as they happen. */
        @Transactional(propagation = Propagation.SUPPORTS)
        public Receipt payWithoutTransactionThenThrow(Payments payments, PaymentRequest request) {
            payments.settle(request);
            throw new IllegalStateException("checkout of " + request.id() + " failed after paying");
        }
    }

    /**
     * The Redis store, with mark writes that fail on demand (Redis unreachable at that moment): the lock and the
     * reads are the real ones.
     */
    static final class FaultyStore implements IdempotencyStore {

        private final IdempotencyStore redis;
        final Set<String> failWrites = ConcurrentHashMap.newKeySet();

        FaultyStore(IdempotencyStore redis) {
            this.redis = redis;
        }

        @Override
        public boolean joinsTransactions() {
            return redis.joinsTransactions();
        }

        @Override
        public String get(String key) {
            return redis.get(key);
        }

        @Override
        public void put(String key, String mark, Duration ttl) {
            fail(key);
            redis.put(key, mark, ttl);
        }

        @Override
        public boolean putIfAbsent(String key, String mark, Duration ttl) {
            fail(key);
            return redis.putIfAbsent(key, mark, ttl);
        }

        private void fail(String key) {
            if (failWrites.remove(key)) {
                throw new IllegalStateException("Redis unreachable writing " + key);
            }
        }

        @Override
        public boolean delete(String key) {
            return redis.delete(key);
        }
    }

    /**
     * Marks in the payments database ({@code payments.store=jdbc}), written through the transaction's connection:
     * they commit and roll back with the payment.
     */
    static final class TableStore implements IdempotencyStore {

        private final JdbcTemplate jdbc;

        TableStore(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
            jdbc.execute("CREATE TABLE IF NOT EXISTS idempotency_mark (mark_key VARCHAR(300) PRIMARY KEY, "
                    + "mark VARCHAR(10000) NOT NULL, expires_at TIMESTAMP NOT NULL)");
        }

        @Override
        public boolean joinsTransactions() {
            return true;
        }

        @Override
        public String get(String key) {
            return jdbc.query("SELECT mark FROM idempotency_mark WHERE mark_key = ? AND expires_at > CURRENT_TIMESTAMP",
                    (rs, row) -> rs.getString(1), key).stream().findFirst().orElse(null);
        }

        @Override
        public void put(String key, String mark, Duration ttl) {
            jdbc.update("DELETE FROM idempotency_mark WHERE mark_key = ?", key);
            jdbc.update("INSERT INTO idempotency_mark (mark_key, mark, expires_at) VALUES (?, ?, ?)", key, mark,
                    java.sql.Timestamp.from(java.time.Instant.now().plus(ttl)));
        }

        @Override
        public boolean delete(String key) {
            return jdbc.update("DELETE FROM idempotency_mark WHERE mark_key = ?", key) > 0;
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @EnableTransactionManagement
    static class Application {

        @Bean(destroyMethod = "shutdown")
        RedissonClient redissonClient(org.springframework.core.env.Environment environment) {
            Config config = new Config();
            config.useSingleServer().setAddress(environment.getRequiredProperty("redis.uri"));
            config.setLockWatchdogTimeout(3000);
            return Redisson.create(config);
        }

        @Bean
        FaultyStore faultyStore(RedissonClient redisson, JdbcTemplate jdbc,
                org.springframework.core.env.Environment environment) {
            return new FaultyStore("jdbc".equals(environment.getProperty("payments.store"))
                    ? new TableStore(jdbc) : new RedissonIdempotencyStore(redisson));
        }

        @Bean
        DataSource dataSource(org.springframework.core.env.Environment environment) throws Exception {
            String url = environment.getRequiredProperty("payments.jdbc-url");
            return new SimpleDriverDataSource(url.startsWith("jdbc:h2:") ? new org.h2.Driver()
                    : java.sql.DriverManager.getDriver(url), url, environment.getProperty("payments.jdbc-user", "sa"),
                    environment.getProperty("payments.jdbc-password", ""));
        }

        @Bean
        PlatformTransactionManager transactionManager(DataSource dataSource) {
            return new DataSourceTransactionManager(dataSource);
        }

        @Bean
        JdbcTemplate jdbcTemplate(DataSource dataSource) {
            return new JdbcTemplate(dataSource);
        }

        @Bean
        Payments payments(JdbcTemplate jdbc) {
            return new Payments(jdbc);
        }

        @Bean
        Orders orders(Payments payments) {
            return new Orders(payments);
        }

        @Bean
        Checkout checkout() {
            return new Checkout();
        }
    }
}
