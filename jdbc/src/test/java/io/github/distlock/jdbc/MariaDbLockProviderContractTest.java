package io.github.distlock.jdbc;

import org.junit.jupiter.api.extension.RegisterExtension;

/** The provider contract on a real MariaDB (see {@link Database}). */
class MariaDbLockProviderContractTest extends JdbcLockProviderContract {

    @RegisterExtension
    static final Database db = Database.mariaDb();

    @Override
    Database database() {
        return db;
    }
}
