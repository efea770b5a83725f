package io.github.distlock.idempotency;

import java.util.UUID;

import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two instances of the payments application on one redis-server and one H2 database, started once per test class:
 * {@code a} and {@code b}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class TwoPaymentInstances {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    PaymentsApplication a;
    PaymentsApplication b;

    /** Properties both instances start with; none by default. */
    String[] instanceProperties() {
        return new String[0];
    }

    @BeforeAll
    void startInstances() {
        String jdbcUrl = "jdbc:h2:mem:payments-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
        a = new PaymentsApplication(redis.uri(), jdbcUrl, instanceProperties());
        b = new PaymentsApplication(redis.uri(), jdbcUrl, instanceProperties());
    }

    @AfterAll
    void stopInstances() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }
}
