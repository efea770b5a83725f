package io.github.distlock.jdbc;

import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.List;
import java.util.Properties;

import javax.sql.DataSource;

import io.github.distlock.DistlockConfigurationException;
import org.jspecify.annotations.Nullable;

/**
 * Where the listener's connection comes from. It is held for as long as the provider lives, so it is opened outside
 * the application's pool where the pool says how: a HikariCP pool (found by {@link DataSource#unwrap}, read by
 * reflection so that no other pool needs HikariCP on the class path) through its own {@code DataSource}, or its JDBC
 * URL, credentials and data source properties with the driver. Any other pool lends one of its connections for good:
 * a pool whose maximum size is known and leaves fewer than two connections to everyone else is refused at startup.
 *
 * <p>Refers to no class of pgjdbc: it is loaded whatever the database.
 */
final class JdbcListenerConnections {

    /** The listener's own connection, the lock statements' one, and a caller's transaction's one. */
    static final int MIN_POOL_SIZE = 3;

    private static final String HIKARI = "com.zaxxer.hikari.HikariDataSource";

    /** Getters of a pool's maximum size, in the pools that have one: HikariCP, Commons DBCP 2, Tomcat, c3p0 / UCP. */
    private static final List<String> MAXIMUM_GETTERS = List.of("getMaximumPoolSize", "getMaxTotal", "getMaxActive",
            "getMaxPoolSize");

    /** Opens a connection of its own. */
    interface Opener {
        Connection open() throws SQLException;
    }

    private final @Nullable Opener direct;
    private final DataSource pool;

    private JdbcListenerConnections(@Nullable Opener direct, DataSource pool) {
        this.direct = direct;
        this.pool = pool;
    }

    /**
     * How the listener of a provider on {@code dataSource} connects.
     *
     * @throws DistlockConfigurationException when the listener would take one of a pool's connections and the pool's
     * maximum leaves fewer than two for the lock statements and a caller's transaction
     */
    static JdbcListenerConnections of(DataSource dataSource) {
        Object hikari = unwrap(dataSource, HIKARI);
        Opener direct = (hikari != null) ? hikariOpener(hikari) : null;
        if (direct == null) {
            Integer maximum = maximumPoolSize((hikari != null) ? hikari : dataSource);
            if (maximum != null && maximum < MIN_POOL_SIZE) {
                throw new DistlockConfigurationException("The jdbc lock backend's listener of other instances' "
                        + "releases (PostgreSQL LISTEN, distlock.jdbc.notify.enabled) holds one connection of the "
                        + "DataSource's pool for as long as the provider lives, and this pool ("
                        + dataSource.getClass().getName() + ") has at most " + maximum + ": the lock statements "
                        + "need another, and a caller's transaction a third",
                        "Raise the pool's maximum size to at least " + MIN_POOL_SIZE + ", or set "
                        + "distlock.jdbc.notify.enabled=false (JdbcLockOptions.withNotifyReleases(false)): waiters "
                        + "then poll for other instances' releases", null);
            }
        }
        return new JdbcListenerConnections(direct, dataSource);
    }

    /** Whether the connection comes from the application's pool (and must be given back clean). */
    boolean pooled() {
        return direct == null;
    }

    Connection open() throws SQLException {
        return (direct != null) ? direct.open() : pool.getConnection();
    }

    private static @Nullable Object unwrap(DataSource dataSource, String className) {
        try {
            Class<?> type = Class.forName(className, false, dataSource.getClass().getClassLoader());
            if (type.isInstance(dataSource)) {
                return dataSource;
            }
            return dataSource.isWrapperFor(type) ? dataSource.unwrap(type) : null;
        }
        catch (ClassNotFoundException | LinkageError | SQLException | RuntimeException ex) {
            return null;
        }
    }

    /**
     * Opens connections as the Hikari pool itself does, without the pool; {@code null} when the pool gets its
     * credentials or data source in a way this cannot repeat (a credentials provider, a data source class name).
     */
    private static @Nullable Opener hikariOpener(Object hikari) {
        try {
            // HikariCP before 7 has neither: no credentials provider then
            if (getIfPresent(hikari, "getCredentialsProvider") != null
                    || getIfPresent(hikari, "getCredentialsProviderClassName") != null) {
                return null;
            }
            String username = (String) get(hikari, "getUsername");
            String password = (String) get(hikari, "getPassword");
            DataSource own = (DataSource) get(hikari, "getDataSource");
            if (own != null) {
                return (username != null) ? () -> own.getConnection(username, password) : own::getConnection;
            }
            String url = (String) get(hikari, "getJdbcUrl");
            if (url == null) {
                return null;
            }
            Properties properties = new Properties();
            Properties configured = (Properties) get(hikari, "getDataSourceProperties");
            if (configured != null) {
                configured.forEach(properties::put);
            }
            if (username != null) {
                properties.setProperty("user", username);
            }
            if (password != null) {
                properties.setProperty("password", password);
            }
            String driverClass = (String) get(hikari, "getDriverClassName");
            Driver driver = null;
            if (driverClass != null) {
                try {
                    driver = (Driver) Class.forName(driverClass, true, hikari.getClass().getClassLoader())
                            .getDeclaredConstructor().newInstance();
                }
                catch (ReflectiveOperationException | LinkageError notThere) {
                    // not visible from Hikari's class loader: the driver registered for the URL serves
                }
            }
            Driver configuredDriver = driver;
            return () -> {
                Driver chosen = (configuredDriver != null) ? configuredDriver : DriverManager.getDriver(url);
                Connection connection = chosen.connect(url, properties);
                if (connection == null) {
                    // not the URL itself: it may carry a password
                    throw new SQLException("Driver " + chosen.getClass().getName() + " does not accept the pool's JDBC URL");
                }
                return connection;
            };
        }
        catch (ReflectiveOperationException | ClassCastException | LinkageError ex) {
            return null;
        }
    }

    private static @Nullable Integer maximumPoolSize(Object pool) {
        for (String getter : MAXIMUM_GETTERS) {
            try {
                Object value = get(pool, getter);
                if (value instanceof Integer maximum && maximum > 0) {
                    return maximum;
                }
            }
            catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
                // not this pool's getter
            }
        }
        return null;
    }

    /** {@code null} also when the getter does not exist (an older version of the pool). */
    private static @Nullable Object getIfPresent(Object target, String getter) throws ReflectiveOperationException {
        try {
            return get(target, getter);
        }
        catch (NoSuchMethodException absent) {
            return null;
        }
    }

    private static @Nullable Object get(Object target, String getter) throws ReflectiveOperationException {
        Method method = target.getClass().getMethod(getter);
        return method.invoke(target);
    }
}
