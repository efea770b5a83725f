package io.github.distlock.generated;

import java.util.List;
import java.util.function.Supplier;

import io.github.distlock.LockContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

/**
 * Calls a palette method inside a transaction of its own (H2) that writes a row and then commits or rolls back.
 */
public class Ledger {

    private final JdbcTemplate jdbc;

    /** The keys this thread held right after the palette call returned, still inside the transaction. */
    static final ThreadLocal<List<String>> HELD_AFTER_CALL = new ThreadLocal<>();

    public Ledger(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @Transactional
    public Object inTransaction(String k, boolean rollback, Supplier<Object> call) {
        jdbc.update("INSERT INTO ledger (k) VALUES (?)", k);
        Object result = call.get();
        HELD_AFTER_CALL.set(LockContext.heldKeys());
        if (rollback) {
            throw new IllegalStateException("rolled back " + k);
        }
        return result;
    }

    int rows(String k) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM ledger WHERE k = ?", Integer.class, k);
    }
}
