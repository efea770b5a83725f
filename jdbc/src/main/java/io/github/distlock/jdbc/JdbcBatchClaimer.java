package io.github.distlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import io.github.distlock.spi.LockDurations;

/**
 * Several instances sharing the rows of a work table, each row processed by one of them: the "lock many rows" pattern.
 * Each instance claims a batch of pending rows by tagging them with a tag of its own and the database's time,
 * processes them, and each row's claim ends in the transaction that does its work; rows claimed longer than
 * {@code staleAfter} (their instance died, or hangs) are claimed again by another instance.
 *
 * <p>The work table needs, besides its id, two columns for the claim (names of your choice):
 * <pre>{@code
 * claimed_by VARCHAR(100)  -- the claiming batch's tag, NULL when unclaimed
 * claimed_at BIGINT        -- when it was claimed: epoch microseconds by the database's clock
 * }</pre>
 * and a condition that tells pending rows, which your work must make false for a row it has done, in the same
 * transaction (for example {@code processed = FALSE}).
 *
 * <pre>{@code
 * JdbcBatchClaimer claimer = new JdbcBatchClaimer(dataSource, "outbox", "id", "claimed_by", "claimed_at",
 *         "sent = FALSE", Duration.ofMinutes(5));
 * int done = claimer.processBatch(100, (connection, id) -> {
 *     ... send the message of row id ...
 *     try (PreparedStatement sent = connection.prepareStatement("UPDATE outbox SET sent = TRUE WHERE id = ?")) {
 *         sent.setObject(1, id);
 *         sent.executeUpdate();
 *     }
 * });
 * }</pre>
 *
 * <p>Exactly once, for what the work does in the database: the transaction of a row's work begins with
 * {@link #takeOver(Connection, Object, String)}, which ends the claim only if it is still this batch's (the row is then
 * locked by that transaction until it commits); a claim that went stale and was taken by another instance makes it
 * answer {@code false}, and the work is skipped. Another instance's claim of the row waits for that transaction and
 * then finds the row no longer pending. What the work does outside the database (a message sent, a call made) happens
 * at least once: an instance that dies after it and before its commit leaves the row to be claimed again.
 *
 * <p>Claims are optimistic: candidates are read without locks and then tagged with one conditional {@code UPDATE}
 * that re-checks each row, so two instances that picked the same candidates get each row once between them (a
 * statement that loses a race for a row to another transaction tags fewer rows, or none). Works on PostgreSQL,
 * MySQL/MariaDB and H2 in their default isolation levels. Table, column names and the pending condition are put into
 * the SQL as they are: they must come from your code, never from input.
 */
public class JdbcBatchClaimer {

    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?");

    private final DataSource dataSource;
    private final String table;
    private final String idColumn;
    private final String claimedBy;
    private final String claimedAt;
    private final String pending;
    private final long staleMicros;
    private final String instanceTag;
    private final AtomicLong batches = new AtomicLong();
    private final JdbcDialect dialect;

    /**
     * The work of one claimed row, in the transaction that ended its claim; it must make the row no longer pending.
     */
    @FunctionalInterface
    public interface RowWork {

        /**
         * @param connection the transaction of this row: do the row's database work on it; don't commit nor close it
         * @param id the row's id
         */
        void process(Connection connection, Object id) throws Exception;
    }

    /**
     * @param dataSource the database of the work table
     * @param table the work table
     * @param idColumn its primary key
     * @param claimedByColumn the column of the claiming batch's tag ({@code VARCHAR} of at least 100)
     * @param claimedAtColumn the column of the claim's time ({@code BIGINT}, epoch µs by the database's clock)
     * @param pendingCondition an SQL condition true for rows that need work, such as {@code processed = FALSE}
     * @param staleAfter how long a claim lasts: older ones are claimed again by other instances. Longer than a batch
     * takes to process, or rows are claimed again while they are worked on (and skipped by their first claimer)
     */
    public JdbcBatchClaimer(DataSource dataSource, String table, String idColumn, String claimedByColumn,
            String claimedAtColumn, String pendingCondition, Duration staleAfter) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.table = identifier("table", table);
        this.idColumn = identifier("idColumn", idColumn);
        this.claimedBy = identifier("claimedByColumn", claimedByColumn);
        this.claimedAt = identifier("claimedAtColumn", claimedAtColumn);
        if (pendingCondition == null || pendingCondition.isBlank()) {
            throw new IllegalArgumentException("pendingCondition must be an SQL condition such as 'processed = FALSE'");
        }
        this.pending = "(" + pendingCondition + ")";
        this.staleMicros = LockDurations.ceilMicros(LockDurations.toNanos(
                LockDurations.checkedPositive("JdbcBatchClaimer staleAfter", staleAfter)));
        this.instanceTag = UUID.randomUUID().toString();
        try (Connection connection = dataSource.getConnection()) {
            this.dialect = JdbcDialect.of(connection);
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Could not connect to detect the database of table " + table, ex);
        }
    }

    private static String identifier(String what, String name) {
        if (name == null || !IDENTIFIER.matcher(name).matches()) {
            throw new IllegalArgumentException(what + " must be a name of letters, digits and underscores (optionally "
                    + "qualified: schema.table), was '" + name + "'");
        }
        return name;
    }

    /** This instance's part of every batch tag: {@code <instance tag>:<batch number>}. */
    public String instanceTag() {
        return instanceTag;
    }

    /**
     * One claimed batch: the rows tagged with its tag.
     *
     * @param tag the value of the claimed-by column of its rows
     * @param ids the rows' ids, in id order
     */
    public record Batch(String tag, List<Object> ids) {

        /** Whether no row was claimed. */
        public boolean isEmpty() {
            return ids.isEmpty();
        }
    }

    /**
     * Claims up to {@code max} pending rows that are unclaimed or whose claim is stale, in its own autocommit
     * transaction.
     *
     * @return the batch; empty when there was nothing to claim or other instances claimed the candidates first
     * @throws JdbcLockException when a statement failed
     */
    public Batch claim(int max) {
        if (max < 1) {
            throw new IllegalArgumentException("max must be at least 1, was " + max);
        }
        String tag = instanceTag + ":" + batches.incrementAndGet();
        String now = dialect.now();
        String claimable = pending + " AND (" + claimedBy + " IS NULL OR " + claimedAt + " <= " + now + " - ?)";
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(true);
            try {
                // a window larger than the batch, shuffled: instances that read at the same moment pick different rows
                List<Object> candidates = new ArrayList<>();
                try (PreparedStatement select = connection.prepareStatement("SELECT " + idColumn + " FROM " + table
                        + " WHERE " + claimable + " ORDER BY " + idColumn + " LIMIT ?")) {
                    select.setLong(1, staleMicros);
                    select.setInt(2, max * 4);
                    try (ResultSet rows = select.executeQuery()) {
                        while (rows.next()) {
                            candidates.add(rows.getObject(1));
                        }
                    }
                }
                if (candidates.isEmpty()) {
                    return new Batch(tag, List.of());
                }
                Collections.shuffle(candidates);
                List<Object> chosen = candidates.subList(0, Math.min(max, candidates.size()));
                String in = String.join(", ", Collections.nCopies(chosen.size(), "?"));
                // re-checks each row: one another instance tagged since the read is left alone
                try (PreparedStatement tagRows = connection.prepareStatement("UPDATE " + table + " SET " + claimedBy
                        + " = ?, " + claimedAt + " = " + now + " WHERE " + idColumn + " IN (" + in + ") AND "
                        + claimable)) {
                    tagRows.setString(1, tag);
                    for (int i = 0; i < chosen.size(); i++) {
                        tagRows.setObject(i + 2, chosen.get(i));
                    }
                    tagRows.setLong(chosen.size() + 2, staleMicros);
                    tagRows.executeUpdate();
                }
                catch (SQLException ex) {
                    if (JdbcDialect.isConflict(ex)) {
                        // lost a race for the rows to another instance's statement: nothing claimed this time
                        return new Batch(tag, List.of());
                    }
                    throw ex;
                }
                return new Batch(tag, idsTagged(connection, tag));
            }
            finally {
                connection.setAutoCommit(autoCommit);
            }
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Claiming rows of table " + table + " failed", ex);
        }
    }

    private List<Object> idsTagged(Connection connection, String tag) throws SQLException {
        List<Object> ids = new ArrayList<>();
        try (PreparedStatement select = connection.prepareStatement("SELECT " + idColumn + " FROM " + table + " WHERE "
                + claimedBy + " = ? ORDER BY " + idColumn)) {
            select.setString(1, tag);
            try (ResultSet rows = select.executeQuery()) {
                while (rows.next()) {
                    ids.add(rows.getObject(1));
                }
            }
        }
        return ids;
    }

    /**
     * Ends the claim of row {@code id} if it is still {@code tag}'s, in the caller's transaction on {@code connection}
     * (autocommit off): call it first in the transaction that does the row's work. Until that transaction ends, the
     * row is locked: no other instance can claim it, and once it commits the row is no longer pending (if the work made
     * it so).
     *
     * @return {@code true} when the claim was still this batch's; {@code false} when it went stale and another
     * instance claimed the row: skip the work and roll back
     */
    public boolean takeOver(Connection connection, Object id, String tag) throws SQLException {
        try (PreparedStatement end = connection.prepareStatement("UPDATE " + table + " SET " + claimedBy + " = NULL, "
                + claimedAt + " = NULL WHERE " + idColumn + " = ? AND " + claimedBy + " = ?")) {
            end.setObject(1, id);
            end.setString(2, tag);
            return end.executeUpdate() == 1;
        }
    }

    /**
     * Gives back the rows of {@code batch} among {@code ids} that are still claimed by it, for other instances to
     * claim at once (work this instance will not do after all).
     *
     * @return how many rows were still claimed by the batch
     */
    public int release(Batch batch, Collection<?> ids) {
        if (ids.isEmpty()) {
            return 0;
        }
        String in = String.join(", ", Collections.nCopies(ids.size(), "?"));
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(true);
            try (PreparedStatement untag = connection.prepareStatement("UPDATE " + table + " SET " + claimedBy
                    + " = NULL, " + claimedAt + " = NULL WHERE " + claimedBy + " = ? AND " + idColumn + " IN (" + in
                    + ")")) {
                untag.setString(1, batch.tag());
                int index = 2;
                for (Object id : ids) {
                    untag.setObject(index++, id);
                }
                return untag.executeUpdate();
            }
            finally {
                connection.setAutoCommit(autoCommit);
            }
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Releasing claimed rows of table " + table + " failed", ex);
        }
    }

    /**
     * Claims up to {@code max} rows and processes each in a transaction of its own: {@link #takeOver} first, then
     * {@code work}, then commit. A row whose claim was lost is skipped; a row whose work throws is rolled back and
     * released for another try (by any instance), and the exception ends the batch after the rest is released.
     *
     * @return how many rows were processed (committed)
     * @throws JdbcLockException when a statement of the claim failed
     * @throws RowWorkException when {@code work} failed for a row (its cause)
     */
    public int processBatch(int max, RowWork work) {
        Batch batch = claim(max);
        int processed = 0;
        List<Object> left = new ArrayList<>(batch.ids());
        try {
            for (Object id : batch.ids()) {
                left.remove(id);
                if (processRow(batch, id, work)) {
                    processed++;
                }
            }
            return processed;
        }
        finally {
            if (!left.isEmpty()) {
                release(batch, left);
            }
        }
    }

    private boolean processRow(Batch batch, Object id, RowWork work) {
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            connection.setAutoCommit(false);
            try {
                if (!takeOver(connection, id, batch.tag())) {
                    connection.rollback();
                    return false;
                }
                work.process(connection, id);
                connection.commit();
                return true;
            }
            catch (Exception ex) {
                connection.rollback();
                release(batch, List.of(id));
                throw new RowWorkException("Processing row " + id + " of table " + table + " failed", ex);
            }
            finally {
                connection.setAutoCommit(autoCommit);
            }
        }
        catch (SQLException ex) {
            throw new JdbcLockException("Processing row " + id + " of table " + table + " failed", ex);
        }
    }

    /** The work of a row failed; the row was rolled back and released. */
    public static class RowWorkException extends RuntimeException {

        /**
         * @param message names the row and table
         * @param cause what the work threw
         */
        public RowWorkException(String message, Throwable cause) {
            super(message + ": " + cause, cause);
        }
    }
}
