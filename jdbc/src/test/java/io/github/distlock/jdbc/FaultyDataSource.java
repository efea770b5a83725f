package io.github.distlock.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

/**
 * A DataSource whose connections fail the statements that begin with a prefix, a given number of times, as the database
 * (or the network) would: to see what the provider does with each kind of failure. Records the SQL of every statement
 * prepared and the threads that took connections, and can hold a statement back before it is prepared.
 */
final class FaultyDataSource {

    private final List<String> statements = new CopyOnWriteArrayList<>();
    private final List<String> threads = new CopyOnWriteArrayList<>();
    private final DataSource dataSource;
    private volatile String failingPrefix;
    private volatile SQLException failure;
    private final AtomicInteger failuresLeft = new AtomicInteger();
    private volatile String delayedPrefix;
    private volatile Runnable delay;
    private volatile boolean networkTimeoutRefused;

    FaultyDataSource(DataSource target) {
        this.dataSource = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getConnection")) {
                        threads.add(Thread.currentThread().getName());
                    }
                    Object result = invoke(target, method, args);
                    return (result instanceof Connection connection) ? faulty(connection) : result;
                });
    }

    /** The next {@code times} statements that begin with {@code prefix} fail with {@code failure}. */
    FaultyDataSource fail(String prefix, SQLException failure, int times) {
        this.failingPrefix = prefix;
        this.failure = failure;
        this.failuresLeft.set(times);
        return this;
    }

    /**
     * Runs {@code delay} on the provider's thread before each statement that begins with {@code prefix} is prepared:
     * to hold one back until the test has seen something happen in the database.
     */
    FaultyDataSource delay(String prefix, Runnable delay) {
        this.delayedPrefix = prefix;
        this.delay = delay;
        return this;
    }

    /** Its connections refuse {@link Connection#setNetworkTimeout}, as a driver without network timeouts does. */
    FaultyDataSource refuseNetworkTimeouts() {
        this.networkTimeoutRefused = true;
        return this;
    }

    private Connection faulty(Connection target) {
        return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                    if (networkTimeoutRefused && method.getName().equals("setNetworkTimeout")) {
                        throw new SQLFeatureNotSupportedException("no network timeout (refused by the test)");
                    }
                    if (method.getName().startsWith("prepare") && args != null && args[0] instanceof String sql) {
                        statements.add(sql);
                        String delayed = delayedPrefix;
                        if (delayed != null && sql.startsWith(delayed)) {
                            delay.run();
                        }
                        String prefix = failingPrefix;
                        if (prefix != null && sql.startsWith(prefix) && failuresLeft.getAndDecrement() > 0) {
                            throw new SQLException(failure.getMessage(), failure.getSQLState(), failure.getErrorCode());
                        }
                    }
                    return invoke(target, method, args);
                });
    }

    private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        }
        catch (InvocationTargetException ex) {
            throw ex.getCause();
        }
    }

    DataSource dataSource() {
        return dataSource;
    }

    /** How many statements so far began with {@code prefix}. */
    int count(String prefix) {
        return (int) statements.stream().filter(sql -> sql.startsWith(prefix)).count();
    }

    /** The names of the threads that took a connection so far. */
    List<String> connectingThreads() {
        return List.copyOf(threads);
    }
}
