package io.github.distlock.zookeeper.autoconfigure;

import java.time.Duration;
import io.github.distlock.LockTemplate;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.autoconfigure.DistlockBackend;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.zookeeper.ZooKeeperLockProvider;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import static org.assertj.core.api.Assertions.assertThat;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import io.github.distlock.LockOptions;

/**
 * A backend property the startup takes either works or fails the startup naming it, never a value taken
 * at startup that makes every later call fail. {@code distlock.zookeeper.session-timeout} at 1 ms, on a
 * real ZooKeeper server (curator-test).
 */
class ZooKeeperSessionTimeoutTakenAtStartupLetsCallsRunTest {

    private static TestingServer server;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, DistlockZooKeeperAutoConfiguration.class,
                    DistlockAutoConfiguration.class));

    @BeforeAll
    static void startServer() throws Exception {
        server = new TestingServer(new InstanceSpec(null, -1, -1, -1, true, -1, 200, -1), true);
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void theShortestSessionTimeoutTheStartupAcceptsLetsLockCallsRun() {
        runner.withPropertyValues("distlock.zookeeper.connect-string=" + server.getConnectString(),
                "distlock.zookeeper.session-timeout=1ms").run(context -> {
                    if (context.getStartupFailure() != null) {
                        assertThat(context.getStartupFailure()).hasStackTraceContaining("distlock.zookeeper.session-timeout");
                        return;
                    }
                    LockTemplate locks = context.getBean(LockTemplate.class);
                    List<String> failures = new ArrayList<>();
                    for (int i = 0; i < 2; i++) {
                        try {
                            locks.execute("short-session", LockOptions.waitFor(Duration.ofSeconds(5)), () -> "ran");
                        }
                        catch (RuntimeException ex) {
                            failures.add(ex.getClass().getSimpleName() + ": " + ex.getMessage());
                        }
                    }
                    assertThat(failures).as("lock calls that failed of 2, once the startup took the timeout").isEmpty();
                });
    }
}
