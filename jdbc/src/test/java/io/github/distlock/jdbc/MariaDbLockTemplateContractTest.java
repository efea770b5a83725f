package io.github.distlock.jdbc;

import io.github.distlock.spi.LockProvider;
import io.github.distlock.test.LockTemplateContractTest;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The template's multi-key locks, re-entry and give-backs on the jdbc provider and a real MariaDB. */
class MariaDbLockTemplateContractTest extends LockTemplateContractTest {

    @RegisterExtension
    static final Database db = Database.mariaDb();

    @Override
    protected LockProvider createProvider() {
        return new JdbcLockProvider(db.dataSource(), JdbcLockProviderContract.options());
    }
}
