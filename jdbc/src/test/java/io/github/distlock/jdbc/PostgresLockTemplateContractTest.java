package io.github.distlock.jdbc;

import io.github.distlock.spi.LockProvider;
import io.github.distlock.test.LockTemplateContractTest;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The template's multi-key locks, re-entry and give-backs on the jdbc provider and a real Postgres. */
class PostgresLockTemplateContractTest extends LockTemplateContractTest {

    @RegisterExtension
    static final Database db = Database.postgres();

    @Override
    protected LockProvider createProvider() {
        return new JdbcLockProvider(db.dataSource(), JdbcLockProviderContract.options());
    }
}
