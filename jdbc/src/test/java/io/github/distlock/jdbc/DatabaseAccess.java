package io.github.distlock.jdbc;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/** {@link Database} for tests in other packages (the auto-configuration's). */
public final class DatabaseAccess implements BeforeAllCallback, AfterAllCallback {

    private final Database database;

    private DatabaseAccess(Database database) {
        this.database = database;
    }

    public static DatabaseAccess postgres() {
        return new DatabaseAccess(Database.postgres());
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        database.beforeAll(context);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        database.afterAll(context);
    }

    /** JDBC URL, user and password. */
    public List<String> connectionArguments() {
        return database.connectionArguments();
    }

    public int update(String sql, Object... arguments) {
        return database.update(sql, arguments);
    }

    public List<Map<String, Object>> query(String sql, Object... arguments) {
        return database.query(sql, arguments);
    }
}
