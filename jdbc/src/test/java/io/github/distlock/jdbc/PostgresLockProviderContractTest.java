package io.github.distlock.jdbc;

import org.junit.jupiter.api.extension.RegisterExtension;

/** The provider contract on a real Postgres (see {@link Database}). */
class PostgresLockProviderContractTest extends JdbcLockProviderContract {

    @RegisterExtension
    static final Database db = Database.postgres();

    @Override
    Database database() {
        return db;
    }
}
