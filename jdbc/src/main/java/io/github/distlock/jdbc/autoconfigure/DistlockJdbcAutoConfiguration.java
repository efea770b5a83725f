package io.github.distlock.jdbc.autoconfigure;

import java.util.Arrays;

import javax.sql.DataSource;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.autoconfigure.ConditionalOnDistlockBackend;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.autoconfigure.DistlockBackend;
import io.github.distlock.autoconfigure.DistlockProperties;
import io.github.distlock.jdbc.JdbcLockOptions;
import io.github.distlock.jdbc.JdbcLockProvider;
import io.github.distlock.jdbc.JdbcLockSchema;
import io.github.distlock.spi.LockProvider;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.jdbc.EmbeddedDatabaseConnection;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.sql.init.DatabaseInitializationMode;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;

/**
 * The jdbc lock backend: locks in a table of the application's {@link DataSource}, offered as the {@code jdbc}
 * {@link DistlockBackend} (used when it is the only backend configured, or when {@code distlock.backend=jdbc}). Nothing
 * touches the database unless this backend is the one in use: the schema is created (per
 * {@code distlock.jdbc.initialize-schema}) and the table checked when the provider is created, at startup.
 */
@AutoConfiguration(after = DataSourceAutoConfiguration.class, before = DistlockAutoConfiguration.class)
@ConditionalOnClass({TransactionAwareDataSourceProxy.class, EmbeddedDatabaseConnection.class})
@ConditionalOnSingleCandidate(DataSource.class)
@ConditionalOnProperty(prefix = "distlock", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties({DistlockJdbcProperties.class, DistlockProperties.class})
public final class DistlockJdbcAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(LockProvider.class)
    @ConditionalOnDistlockBackend("jdbc")
    DistlockBackend jdbcLockBackend(ObjectProvider<DataSource> dataSource, ListableBeanFactory beanFactory,
            DistlockJdbcProperties jdbc, DistlockProperties properties) {
        // checked now, so that a wrong value fails the startup naming its property even if another backend is chosen
        JdbcLockOptions options = jdbc.toOptions(properties.getWatchdogTimeout());
        return new DistlockBackend("jdbc", "DataSource bean '" + dataSourceName(beanFactory) + "'", () -> {
            DataSource database = dataSource.getObject();
            initializeSchema(database, jdbc.getInitializeSchema(), options.tableName());
            return new JdbcLockProvider(database, options);
        });
    }

    /** The name of the DataSource this backend uses: the only one, or the primary one. */
    private static String dataSourceName(ListableBeanFactory beanFactory) {
        String[] names = beanFactory.getBeanNamesForType(DataSource.class, true, false);
        if (names.length > 1 && beanFactory instanceof ConfigurableListableBeanFactory configurable) {
            return Arrays.stream(names).filter(name -> configurable.containsBeanDefinition(name)
                    && configurable.getBeanDefinition(name).isPrimary()).findFirst().orElse(String.join("', '", names));
        }
        return String.join("', '", names);
    }

    private static void initializeSchema(DataSource dataSource, DatabaseInitializationMode mode, String table) {
        if (mode == DatabaseInitializationMode.NEVER
                || (mode == DatabaseInitializationMode.EMBEDDED && !EmbeddedDatabaseConnection.isEmbedded(dataSource))) {
            return;
        }
        try {
            JdbcLockSchema.create(dataSource, table);
        }
        catch (RuntimeException ex) {
            throw new DistlockConfigurationException("distlock.jdbc.initialize-schema=" + mode.name().toLowerCase(
                    java.util.Locale.ROOT) + " could not create the lock table '" + table + "': " + ex.getMessage(),
                    "Grant the application's database user CREATE TABLE, or create the table yourself with the "
                    + "script " + scriptName(dataSource) + " in the distlock-jdbc jar and set "
                    + "distlock.jdbc.initialize-schema=never.", ex);
        }
    }

    private static String scriptName(DataSource dataSource) {
        try {
            return JdbcLockSchema.scriptFor(dataSource);
        }
        catch (RuntimeException ex) {
            return "io/github/distlock/jdbc/schema-<database>.sql";
        }
    }
}
