package io.github.distlock.etcd.autoconfigure;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.github.distlock.LockTemplate;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.autoconfigure.DistlockBackend;
import io.github.distlock.etcd.EtcdLockProvider;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.testsupport.EtcdServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The etcd backend's auto-configuration, on a real etcd where it connects. */
class DistlockEtcdAutoConfigurationTest {

    private static EtcdServer etcd;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, DistlockEtcdAutoConfiguration.class,
                    DistlockAutoConfiguration.class));

    @BeforeAll
    static void startServer() {
        etcd = EtcdServer.startUnlessSkipped();
    }

    @org.junit.jupiter.api.BeforeEach
    void assumeServer() {
        EtcdServer.assumeRunning(etcd);
    }

    @AfterAll
    static void stopServer() {
        if (etcd != null) {
            etcd.close();
        }
    }

    private static List<KeyValue> entries(Client client, String prefix) {
        return client.getKVClient().get(ByteSequence.from(prefix, StandardCharsets.UTF_8),
                GetOption.builder().isPrefix(true).build()).join().getKvs();
    }

    @Test
    void endpointsConfigureTheBackendOnAClientOfItsOwnClosedWithTheApplication() {
        AtomicInteger customized = new AtomicInteger();
        Client[] client = new Client[1];
        runner.withBean(EtcdClientBuilderCustomizer.class, () -> builder -> customized.incrementAndGet())
                .withPropertyValues("distlock.etcd.endpoints=" + etcd.endpoint(), "distlock.etcd.namespace=app1/locks/",
                        "distlock.watchdog-timeout=2500ms").run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(EtcdLockProvider.class).hasSingleBean(LockTemplate.class)
                            .doesNotHaveBean(Client.class);
                    assertThat(context.getBean(DistlockBackend.class).description())
                            .isEqualTo("distlock.etcd.endpoints=" + etcd.endpoint());
                    EtcdLockProvider provider = context.getBean(EtcdLockProvider.class);
                    assertThat(provider.sessionTtlSeconds()).as("distlock.watchdog-timeout, rounded up").isEqualTo(3);
                    client[0] = provider.getClient();
                    String prefix = provider.lockPrefix("lock:order-1");
                    assertThat(prefix).isEqualTo("app1/locks/lock:order-1/");
                    List<KeyValue> during = context.getBean(LockTemplate.class).execute("order-1",
                            () -> entries(client[0], prefix));
                    assertThat(during).as("the lock's entry while the method runs").hasSize(1);
                    assertThat(during.get(0).getLease()).as("attached to a lease").isNotZero();
                    assertThat(entries(client[0], prefix)).as("after the call").isEmpty();
                });
        assertThat(customized).hasValue(1);
        assertThatThrownBy(() -> client[0].getKVClient().get(ByteSequence.from("x", StandardCharsets.UTF_8)).join())
                .as("the client it built, after the application stopped: its executor is shut down")
                .hasRootCauseInstanceOf(java.util.concurrent.RejectedExecutionException.class);
    }

    @Test
    void anApplicationsClientBeanIsUsed() {
        runner.withBean("appEtcd", Client.class, () -> Client.builder().endpoints(etcd.endpoint()).build())
                .withPropertyValues("distlock.etcd.endpoints=http://ignored:2379").run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(EtcdLockProvider.class);
                    assertThat(context.getBean(EtcdLockProvider.class).getClient()).isSameAs(context.getBean(Client.class));
                    assertThat(context.getBean(DistlockBackend.class).description()).isEqualTo("etcd Client bean 'appEtcd'");
                    assertThat(context.getBean(LockTemplate.class).execute("k", () -> "locked")).isEqualTo("locked");
                });
    }

    @Test
    void withoutAClientBeanOrEndpointsThereIsNoBackend() {
        runner.run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(DistlockBackend.class)
                .doesNotHaveBean(LockProvider.class));
    }

    @Test
    void backsOffWhenJetcdIsNotOnTheClassPath() {
        runner.withClassLoader(new FilteredClassLoader("io.etcd.jetcd"))
                .withPropertyValues("distlock.etcd.endpoints=" + etcd.endpoint())
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(DistlockBackend.class)
                        .doesNotHaveBean(LockProvider.class));
    }

    @Test
    void anotherChosenBackendLeavesEtcdAlone() {
        runner.withPropertyValues("distlock.etcd.endpoints=" + etcd.endpoint(), "distlock.backend=zookeeper")
                .run(context -> assertThat(context).doesNotHaveBean(EtcdLockProvider.class)
                        .getBeans(DistlockBackend.class).isEmpty());
    }

    @Test
    void badEndpointsFailTheStartupNamingTheProperty() {
        runner.withPropertyValues("distlock.etcd.endpoints=" + etcd.endpoint() + ",etcd-2:2379").run(context -> assertThat(context)
                .hasFailed().getFailure().rootCause().isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("distlock.etcd.endpoints[1] must be a URL such as http://etcd-1:2379")
                .hasMessageContaining("'etcd-2:2379'"));
    }

    @Test
    void anEmptyNamespaceOrAPasswordWithoutUserFailsTheStartup() {
        runner.withPropertyValues("distlock.etcd.endpoints=" + etcd.endpoint(), "distlock.etcd.namespace=")
                .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
                        .hasMessageContaining("distlock.etcd.namespace must not be empty"));
        runner.withPropertyValues("distlock.etcd.endpoints=" + etcd.endpoint(), "distlock.etcd.password=secret")
                .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
                        .hasMessageContaining("distlock.etcd.password is set without distlock.etcd.user"));
    }
}
