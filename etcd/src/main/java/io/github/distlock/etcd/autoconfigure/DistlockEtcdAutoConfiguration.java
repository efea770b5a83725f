package io.github.distlock.etcd.autoconfigure;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.autoconfigure.ConditionalOnDistlockBackend;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.autoconfigure.DistlockBackend;
import io.github.distlock.autoconfigure.DistlockProperties;
import io.github.distlock.etcd.EtcdLockProvider;
import io.github.distlock.spi.LockProvider;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.ConfigurationCondition;

/**
 * The etcd lock backend ({@code distlock.backend=etcd}): configured by the application's jetcd {@link Client} bean,
 * or by {@code distlock.etcd.endpoints}, from which a client of its own is built (and closed with the application).
 * Backs off when jetcd is not on the class path.
 */
@AutoConfiguration(before = DistlockAutoConfiguration.class)
@ConditionalOnClass(Client.class)
@ConditionalOnProperty(prefix = "distlock", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties({DistlockProperties.class, DistlockEtcdProperties.class})
public final class DistlockEtcdAutoConfiguration {

    private static final Log logger = LogFactory.getLog(DistlockEtcdAutoConfiguration.class);

    @Bean
    @ConditionalOnMissingBean(LockProvider.class)
    @ConditionalOnDistlockBackend("etcd")
    @Conditional(EtcdConfigured.class)
    DistlockBackend etcdLockBackend(ObjectProvider<Client> clients, ListableBeanFactory beanFactory,
            DistlockEtcdProperties etcd, DistlockProperties distlock, ObjectProvider<EtcdClientBuilderCustomizer> customizers) {
        Duration watchdog = distlock.getWatchdogTimeout();
        if (watchdog.toMillis() % 1000 != 0) {
            logger.info("distlock.watchdog-timeout=" + watchdog + " is rounded up to " + ((watchdog.toMillis() + 999) / 1000)
                    + " s for etcd, whose leases count whole seconds");
        }
        String[] names = beanFactory.getBeanNamesForType(Client.class, true, false);
        if (names.length > 0) {
            if (!etcd.getEndpoints().isEmpty()) {
                logger.warn("distlock.etcd.endpoints is ignored: the etcd lock backend uses the Client bean '"
                        + String.join("', '", names) + "'");
            }
            return new DistlockBackend("etcd", "etcd Client bean '" + String.join("', '", names) + "'",
                    () -> new EtcdLockProvider(clients.getObject(), etcd.getNamespace(), watchdog));
        }
        if (etcd.getPassword() != null && etcd.getUser() == null) {
            throw new DistlockConfigurationException("distlock.etcd.password is set without distlock.etcd.user",
                    "Set distlock.etcd.user too, or remove distlock.etcd.password.", null);
        }
        return new DistlockBackend("etcd", "distlock.etcd.endpoints=" + String.join(",", etcd.getEndpoints()),
                () -> ownClientProvider(etcd, watchdog, customizers));
    }

    /** A provider on a client of its own, which it closes when it is closed. */
    static EtcdLockProvider ownClientProvider(DistlockEtcdProperties etcd, Duration watchdog,
            ObjectProvider<EtcdClientBuilderCustomizer> customizers) {
        ClientBuilder builder = Client.builder().endpoints(etcd.getEndpoints().toArray(String[]::new));
        if (etcd.getUser() != null) {
            builder.user(ByteSequence.from(etcd.getUser(), StandardCharsets.UTF_8));
            builder.password(ByteSequence.from(etcd.getPassword() != null ? etcd.getPassword() : "", StandardCharsets.UTF_8));
        }
        customizers.orderedStream().forEach(customizer -> customizer.customize(builder));
        // connects on first use: an etcd that is down fails the lock calls (LockBackendException), not the startup
        Client client = builder.build();
        try {
            return new EtcdLockProvider(client, etcd.getNamespace(), watchdog) {
                @Override
                public void close() {
                    try {
                        super.close();
                    }
                    finally {
                        client.close();
                    }
                }
            };
        }
        catch (RuntimeException ex) {
            client.close();
            throw ex;
        }
    }

    /** A jetcd Client bean, or endpoints to build one from. */
    static final class EtcdConfigured extends AnyNestedCondition {

        EtcdConfigured() {
            super(ConfigurationCondition.ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnBean(Client.class)
        static final class ClientBean {
        }

        @ConditionalOnProperty(prefix = "distlock.etcd", name = "endpoints")
        static final class Endpoints {
        }
    }
}
