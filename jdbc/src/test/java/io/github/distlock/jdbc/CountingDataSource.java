package io.github.distlock.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import javax.sql.DataSource;

/** A DataSource that records the SQL of every statement prepared on its connections, to count what a provider sends. */
final class CountingDataSource {

    private final List<String> statements = new CopyOnWriteArrayList<>();
    private final DataSource dataSource;

    CountingDataSource(DataSource target) {
        this.dataSource = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    Object result = invoke(target, method, args);
                    return (result instanceof Connection connection) ? counting(connection) : result;
                });
    }

    private Connection counting(Connection target) {
        return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                    if (method.getName().startsWith("prepare") && args != null && args[0] instanceof String sql) {
                        statements.add(sql);
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
}
