package io.github.distlock.jdbc;

import org.junit.jupiter.api.extension.RegisterExtension;

/** The provider contract on a H2 in memory (see {@link Database}). */
class H2LockProviderContractTest extends JdbcLockProviderContract {

    @RegisterExtension
    static final Database db = Database.h2();

    @Override
    Database database() {
        return db;
    }
}
