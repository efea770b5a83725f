package io.github.distlock.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.boot.autoconfigure.ImportAutoConfiguration;

/**
 * Puts a test's application on in-memory locks: an {@link InMemoryLockProvider} becomes the {@code LockProvider}, so
 * no lock backend (Redis, a database, ZooKeeper, etcd) is needed, contacted or even connected to. The application's
 * {@code @DistributedLock} methods and {@code LockTemplate} calls keep their semantics (waits, leases, types, fencing,
 * re-entry) within the test's JVM; inject {@link InMemoryLockProvider} to look at or interfere with its locks, and use
 * {@link LockAssert} to check what ran under which lock.
 *
 * <pre>{@code
 * @SpringBootTest
 * @AutoConfigureInMemoryLocks
 * class OrderServiceTest {
 *     ...
 * }
 * }</pre>
 *
 * <p>Only this annotation switches it on: the auto-configuration it imports is not listed among the application's
 * auto-configurations, and the artifact it lives in ({@code distlock-test}) belongs in test scope, so a production
 * application can't run on locks that exclude nothing beyond its own process. A {@code LockProvider} bean of the test's
 * own still wins.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ImportAutoConfiguration
public @interface AutoConfigureInMemoryLocks {
}
