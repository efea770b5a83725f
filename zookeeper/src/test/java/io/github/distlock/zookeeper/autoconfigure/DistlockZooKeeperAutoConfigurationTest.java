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

/** The ZooKeeper backend's auto-configuration, on a real server where it connects. */
class DistlockZooKeeperAutoConfigurationTest {

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
    void aConnectStringConfiguresTheBackendOnAClientOfItsOwnClosedWithTheApplication() {
        CuratorFramework[] client = new CuratorFramework[1];
        runner.withPropertyValues("distlock.zookeeper.connect-string=" + server.getConnectString(),
                "distlock.zookeeper.base-path=/locks/app", "distlock.watchdog-timeout=3s").run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(ZooKeeperLockProvider.class)
                            .hasSingleBean(LockTemplate.class).doesNotHaveBean(CuratorFramework.class);
                    assertThat(context.getBean(DistlockBackend.class).description())
                            .isEqualTo("distlock.zookeeper.connect-string=" + server.getConnectString());
                    ZooKeeperLockProvider provider = context.getBean(ZooKeeperLockProvider.class);
                    client[0] = provider.getClient();
                    assertThat(client[0].blockUntilConnected(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
                    // the session timeout asked for is distlock.watchdog-timeout, and the server granted it
                    assertThat(client[0].getZookeeperClient().getZooKeeper().getSessionTimeout()).isEqualTo(3_000);
                    // the key is distlock.key-prefix ("lock:") and the method's key
                    String taken = context.getBean(LockTemplate.class).execute("order-1", () -> {
                        // while the method runs, its lock node is there, under the base path
                        return String.join(",", client[0].getChildren().forPath(provider.lockPath("lock:order-1")));
                    });
                    assertThat(provider.lockPath("lock:order-1")).startsWith("/locks/app/");
                    assertThat(taken).contains("__WRIT__");
                    assertThat(client[0].getChildren().forPath(provider.lockPath("lock:order-1"))).as("after the call").isEmpty();
                });
        assertThat(client[0].getState()).as("the client it built, after the application stopped")
                .isEqualTo(CuratorFrameworkState.STOPPED);
    }

    @Test
    void anApplicationsCuratorFrameworkBeanIsUsedAndLeftToItsOwner() {
        runner.withBean("appCurator", CuratorFramework.class, () -> {
            CuratorFramework curator = CuratorFrameworkFactory.newClient(server.getConnectString(), new RetryOneTime(100));
            curator.start();
            return curator;
        }).withPropertyValues("distlock.zookeeper.connect-string=ignored:1").run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(ZooKeeperLockProvider.class);
            assertThat(context.getBean(ZooKeeperLockProvider.class).getClient()).isSameAs(context.getBean(CuratorFramework.class));
            assertThat(context.getBean(DistlockBackend.class).description()).isEqualTo("CuratorFramework bean 'appCurator'");
            assertThat(context.getBean(LockTemplate.class).execute("k", () -> "locked")).isEqualTo("locked");
        });
    }

    @Test
    void aCuratorFrameworkBeanThatWasNotStartedFailsTheStartupSayingSo() {
        runner.withBean("appCurator", CuratorFramework.class,
                () -> CuratorFrameworkFactory.newClient(server.getConnectString(), new RetryOneTime(100)))
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).rootCause().isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining("needs a started CuratorFramework; this one is LATENT");
                });
    }

    @Test
    void withoutACuratorBeanOrAConnectStringThereIsNoBackend() {
        runner.run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(DistlockBackend.class)
                .doesNotHaveBean(LockProvider.class));
    }

    @Test
    void backsOffWhenCuratorIsNotOnTheClassPath() {
        runner.withClassLoader(new FilteredClassLoader("org.apache.curator"))
                .withPropertyValues("distlock.zookeeper.connect-string=" + server.getConnectString())
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(DistlockBackend.class)
                        .doesNotHaveBean(LockProvider.class));
    }

    @Test
    void anotherChosenBackendLeavesZooKeeperAlone() {
        runner.withPropertyValues("distlock.zookeeper.connect-string=" + server.getConnectString(), "distlock.backend=etcd")
                .run(context -> assertThat(context).doesNotHaveBean(ZooKeeperLockProvider.class)
                        .getBeans(DistlockBackend.class).isEmpty());
    }

    @Test
    void chosenByName() {
        runner.withPropertyValues("distlock.zookeeper.connect-string=" + server.getConnectString(),
                "distlock.backend=zookeeper").run(context -> assertThat(context).hasNotFailed()
                        .hasSingleBean(ZooKeeperLockProvider.class));
    }

    @Test
    void aBadBasePathFailsTheStartupNamingTheProperty() {
        runner.withPropertyValues("distlock.zookeeper.connect-string=" + server.getConnectString(),
                "distlock.zookeeper.base-path=locks").run(context -> assertThat(context).hasFailed().getFailure()
                        .rootCause().isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("distlock.zookeeper.base-path must be an absolute ZooKeeper path")
                        .hasMessageContaining("'locks'"));
        runner.withPropertyValues("distlock.zookeeper.connect-string=" + server.getConnectString(),
                "distlock.zookeeper.base-path=/").run(context -> assertThat(context).hasFailed().getFailure()
                        .rootCause().hasMessageContaining("distlock.zookeeper.base-path must be a node of its own"));
    }

    @Test
    void aBlankConnectStringFailsTheStartupNamingTheProperty() {
        runner.withPropertyValues("distlock.zookeeper.connect-string= ").run(context -> assertThat(context).hasFailed()
                .getFailure().rootCause().hasMessageContaining("distlock.zookeeper.connect-string must not be blank"));
    }

    @Test
    void theSessionTimeoutPropertyWinsOverTheWatchdogTimeout() {
        runner.withPropertyValues("distlock.zookeeper.connect-string=" + server.getConnectString(),
                "distlock.zookeeper.session-timeout=2s", "distlock.watchdog-timeout=3s").run(context -> {
                    CuratorFramework client = context.getBean(ZooKeeperLockProvider.class).getClient();
                    assertThat(client.blockUntilConnected(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
                    assertThat(client.getZookeeperClient().getZooKeeper().getSessionTimeout())
                            .isEqualTo((int) Duration.ofSeconds(2).toMillis());
                });
    }
}
