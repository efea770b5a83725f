package io.github.distlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import javax.sql.DataSource;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.spi.LockInstance;
import org.jspecify.annotations.Nullable;

/**
 * The lock table's statements: take a row, free it, renew an instance's rows, raise a token, read whether a row is
 * still held. Each runs on a connection of its own from the {@link DataSource}, in autocommit: never in a caller's
 * transaction. The differences between databases are {@link JdbcDialect}'s; which thread runs a statement is the
 * caller's concern ({@link JdbcWorkers}).
 */
final class JdbcLockRepository {

    private final DataSource dataSource;
    private final String table;
    private final JdbcDialect dialect;
    private final String instance;
    private final long watchdogMicros;
    /** The channel of this table's notifications (PostgreSQL). */
    private final String channel;

    JdbcLockRepository(DataSource dataSource, String table, String instance, long watchdogMicros) {
        this.dataSource = dataSource;
        this.table = table;
        this.instance = instance;
        this.watchdogMicros = watchdogMicros;
        this.dialect = checkDatabase(dataSource, table);
        this.channel = channel((dialect == JdbcDialect.POSTGRESQL) ? resolved(dataSource, table) : table);
    }

    /**
     * The table's name with the schema it resolves to (PostgreSQL; the name as given when it cannot be read): so that
     * instances naming the table with or without its schema, or finding it through different search paths, share
     * its channel, and instances with different tables of one name do not.
     */
    private static String resolved(DataSource dataSource, String table) {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement statement = connection.prepareStatement("SELECT n.nspname, c.relname FROM pg_class c"
                        + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(?)")) {
            statement.setString(1, table);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getString(1) + "." + rows.getString(2) : table;
            }
        }
        catch (SQLException ex) {
            return table;
        }
    }

    /** Detects the dialect and reads the table once, so that a missing table fails the startup, not the first call. */
    private static JdbcDialect checkDatabase(DataSource dataSource, String table) {
        JdbcDialect dialect;
        try (Connection connection = dataSource.getConnection()) {
            try {
                dialect = JdbcDialect.of(connection);
            }
            catch (IllegalArgumentException ex) {
                throw new DistlockConfigurationException(ex.getMessage() + ".",
                        "Use a supported database for locks, or another distlock backend (distlock.backend).", ex);
            }
            try (PreparedStatement locks = connection.prepareStatement(lockTableCheck(table));
                    PreparedStatement peers = connection.prepareStatement(peerTableCheck(table))) {
                locks.executeQuery().close();
                peers.executeQuery().close();
                return dialect;
            }
            catch (SQLException ex) {
                throw new DistlockConfigurationException("distlock's lock table '" + table + "' (or its table of "
                        + "instances '" + table + PEERS + "') is missing or not as its schema script makes it ("
                        + connection.getMetaData().getDatabaseProductName() + "): "
                        + ex.getMessage(),
                        "Create the table with the script " + dialect.schemaScript() + " in the distlock-jdbc jar (by "
                        + "hand, Flyway or Liquibase), or set distlock.jdbc.initialize-schema=always to let distlock "
                        + "create it at startup. distlock.jdbc.table-name names the table ('" + table + "').", ex);
            }
        }
        catch (SQLException ex) {
            throw new DistlockConfigurationException("distlock could not connect to the database of its lock table '"
                    + table + "': " + ex.getMessage(),
                    "Check the DataSource (spring.datasource.*) and that the database is up.", ex);
        }
    }

    /** The suffix of the table of instances: {@code <table>_peers}. */
    static final String PEERS = "_peers";

    /** A read of every column of the lock table that fails unless the table is as its schema script makes it. */
    static String lockTableCheck(String table) {
        return "SELECT lock_key, owner, instance, expires_at, token, closed FROM " + table + " WHERE 1 = 0";
    }

    /** A read of every column of the table of instances that fails unless it is as the schema script makes it. */
    static String peerTableCheck(String table) {
        return "SELECT instance, application, host, pid, expires_at FROM " + table + PEERS + " WHERE 1 = 0";
    }

    JdbcDialect dialect() {
        return dialect;
    }

    String table() {
        return table;
    }

    String channel() {
        return channel;
    }

    DataSource dataSource() {
        return dataSource;
    }

    String instance() {
        return instance;
    }

    /** Work on one connection of the pool, in autocommit: never a caller's transaction. */
    interface SqlWork<T> {
        T run(Connection connection) throws SQLException;
    }

    <T> T withConnection(SqlWork<T> work) throws SQLException {
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            if (!autoCommit) {
                // a pool configured without autocommit: each lock statement must still commit on its own at once
                connection.setAutoCommit(true);
            }
            try {
                return work.run(connection);
            }
            finally {
                if (!autoCommit) {
                    connection.setAutoCommit(false);
                }
            }
        }
    }

    private int update(String sql, Object... arguments) throws SQLException {
        return withConnection(connection -> {
            try (PreparedStatement statement = connection.prepareStatement(sql)) {
                bind(statement, arguments);
                return statement.executeUpdate();
            }
        });
    }

    private static void bind(PreparedStatement statement, Object... arguments) throws SQLException {
        for (int i = 0; i < arguments.length; i++) {
            if (arguments[i] instanceof Long value) {
                statement.setLong(i + 1, value);
            }
            else {
                statement.setString(i + 1, (String) arguments[i]);
            }
        }
    }

    /**
     * One try to take {@code grant}'s key (see {@link JdbcDialect#tryAcquire}): its token when taken, {@code null}
     * when another owner holds it.
     */
    Claim tryAcquire(JdbcDialect.Grant grant) throws SQLException {
        return tryAcquire(grant, false);
    }

    /**
     * Like {@link #tryAcquire(JdbcDialect.Grant)}; when {@code announce} (PostgreSQL only), a try that does not get the
     * key also tells the other instances, in the same statement that reads why, that this instance waits for it
     * ({@code pg_notify}): their release of it will be notified.
     */
    Claim tryAcquire(JdbcDialect.Grant grant, boolean announce) throws SQLException {
        return withConnection(connection -> {
            Long token = dialect.tryAcquire(connection, table, grant);
            // only a try that did not get the key asks why: the claim itself left a closed key alone
            return new Claim(token, (token != null) ? null
                    : closedReason(connection, grant.key(), announce && dialect == JdbcDialect.POSTGRESQL));
        });
    }

    /**
     * The channel of the notifications of {@code table} (its name with its schema, as the database resolved it): a
     * name of its own per table (case folded as PostgreSQL folds an unquoted name), so that two tables' instances do
     * not wake each other; a hash, so that it fits PostgreSQL's 63 characters whatever the table's name.
     */
    static String channel(String table) {
        try {
            byte[] digest = java.security.MessageDigest.getInstance("SHA-256")
                    .digest(table.toLowerCase(java.util.Locale.ROOT).getBytes(StandardCharsets.UTF_8));
            return "distlock_" + java.util.HexFormat.of().formatHex(digest, 0, 8);
        }
        catch (java.security.NoSuchAlgorithmException ex) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", ex);
        }
    }

    /** A notification's payload: a release of {@code key} by this instance. */
    static final char RELEASED = 'r';

    /** A notification's payload: this instance waits for {@code key}. */
    static final char WAITING = 'w';

    /**
     * The payload of a notification about {@code key}: its kind, the sending instance (36 characters) and the key. A key
     * is at most 255 UTF-16 chars, so at most 765 bytes in UTF-8: well within PostgreSQL's 8000 bytes, whole.
     */
    String payload(char kind, String key) {
        return kind + instance + key;
    }

    /**
     * The outcome of one try.
     *
     * @param token as {@link JdbcDialect#tryAcquire}: {@code null} when not taken
     * @param closed why the key is closed, when it was not taken because it is; otherwise {@code null}
     */
    record Claim(@Nullable Long token, @Nullable String closed) {
    }

    private @Nullable String closedReason(Connection connection, String key, boolean announce) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(announce
                ? "SELECT closed, pg_notify(?, ?) FROM " + table + " WHERE lock_key = ?"
                : "SELECT closed FROM " + table + " WHERE lock_key = ?")) {
            int index = 1;
            if (announce) {
                statement.setString(index++, channel);
                statement.setString(index++, payload(WAITING, key));
            }
            statement.setString(index, key);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getString(1) : null;
            }
        }
    }

    /**
     * Closes {@code key} with {@code reason}: marks its row, creating it (free) when the key was never locked. A holder
     * keeps its row.
     */
    void closeKey(String key, String reason) throws SQLException {
        String now = dialect.now();
        withConnection(connection -> {
            for (int attempt = 1; ; attempt++) {
                try (PreparedStatement close = connection.prepareStatement("UPDATE " + table
                        + " SET closed = ? WHERE lock_key = ?")) {
                    close.setString(1, reason);
                    close.setString(2, key);
                    if (close.executeUpdate() > 0) {
                        return null;
                    }
                }
                try (PreparedStatement create = connection.prepareStatement("INSERT INTO " + table
                        + " (lock_key, owner, instance, expires_at, token, closed) VALUES (?, NULL, NULL, " + now + ", "
                        + now + ", ?)")) {
                    create.setString(1, key);
                    create.setString(2, reason);
                    create.executeUpdate();
                    return null;
                }
                catch (SQLException ex) {
                    // another instance created the row in between (locked or closed it): the UPDATE finds it now
                    if (attempt >= 3 || !(JdbcDialect.isDuplicateKey(ex) || JdbcDialect.isConflict(ex))) {
                        throw ex;
                    }
                }
            }
        });
    }

    /** Reopens {@code key}: clears its row's reason; nothing when it has no row or is open. */
    void reopenKey(String key) throws SQLException {
        update("UPDATE " + table + " SET closed = NULL WHERE lock_key = ?", key);
    }

    /**
     * The live hold of a key, by the database's clock.
     *
     * @param owner {@code <instance>:<owner id>}
     * @param remainingMicros how long its lease has left
     */
    record Hold(String owner, long remainingMicros) {
    }

    /** Who holds {@code key} now: empty or one hold. */
    List<Hold> holders(String key) throws SQLException {
        return withConnection(connection -> readHold(connection, key, false));
    }

    private List<Hold> readHold(Connection connection, String key, boolean forUpdate) throws SQLException {
        String now = dialect.now();
        try (PreparedStatement statement = connection.prepareStatement("SELECT owner, expires_at - " + now
                + " FROM " + table + " WHERE lock_key = ? AND owner IS NOT NULL AND expires_at > " + now
                + (forUpdate ? " FOR UPDATE" : ""))) {
            statement.setString(1, key);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? List.of(new Hold(rows.getString(1), rows.getLong(2))) : List.of();
            }
        }
    }

    /**
     * Frees {@code key} if it is held (by {@code expectedOwner}, unless that is {@code null}), keeping its token and
     * whether it is closed. One transaction: the row is read and locked ({@code SELECT ... FOR UPDATE}, which every
     * dialect has) and freed by the owner read, so that the holds returned are exactly the ones evicted.
     *
     * @return whether it was freed, with the hold evicted; otherwise with the hold now (empty when free)
     */
    Eviction forceRelease(String key, @Nullable String expectedOwner) throws SQLException {
        String now = dialect.now();
        return withConnection(connection -> {
            connection.setAutoCommit(false);
            try {
                List<Hold> holds = readHold(connection, key, true);
                boolean evict = !holds.isEmpty()
                        && (expectedOwner == null || expectedOwner.equals(holds.get(0).owner()));
                if (evict) {
                    try (PreparedStatement free = connection.prepareStatement("UPDATE " + table + " SET owner = NULL, "
                            + "instance = NULL, expires_at = " + now + " WHERE lock_key = ? AND owner = ?")) {
                        free.setString(1, key);
                        free.setString(2, holds.get(0).owner());
                        evict = free.executeUpdate() == 1;
                    }
                }
                connection.commit();
                return new Eviction(evict, holds);
            }
            catch (SQLException | RuntimeException ex) {
                connection.rollback();
                throw ex;
            }
            finally {
                connection.setAutoCommit(true);
            }
        });
    }

    /**
     * The answer of {@link #forceRelease}.
     *
     * @param released whether the key was freed
     * @param holds the hold evicted when released, otherwise the hold now
     */
    record Eviction(boolean released, List<Hold> holds) {
    }

    /**
     * The owners of the held rows of {@code keys}, by key, whether or not their expiry has passed: one read by primary
     * key, for the fixed-lease locks of this instance, to find those taken away. Free rows are left out.
     */
    Map<String, String> owners(Collection<String> keys) throws SQLException {
        String in = String.join(", ", Collections.nCopies(keys.size(), "?"));
        return withConnection(connection -> {
            Map<String, String> owners = new HashMap<>();
            try (PreparedStatement statement = connection.prepareStatement("SELECT lock_key, owner FROM " + table
                    + " WHERE lock_key IN (" + in + ") AND owner IS NOT NULL")) {
                int index = 1;
                for (String key : keys) {
                    statement.setString(index++, key);
                }
                try (ResultSet rows = statement.executeQuery()) {
                    while (rows.next()) {
                        owners.put(keyOf(rows), rows.getString(2));
                    }
                }
            }
            return owners;
        });
    }

    /** The key of a row: MySQL keeps it as bytes (see its schema script). */
    private static String keyOf(ResultSet rows) throws SQLException {
        Object key = rows.getObject(1);
        return (key instanceof byte[] bytes) ? new String(bytes, StandardCharsets.UTF_8) : rows.getString(1);
    }

    /**
     * Writes (or renews) this instance's entry in the table of instances, living {@code leaseMicros} from the
     * database's now. The first write also drops the entries of instances gone for a day, so that the table does not
     * grow with every restart.
     */
    void announce(LockInstance self, long leaseMicros) throws SQLException {
        String now = dialect.now();
        String application = clip(self.application());
        String host = clip(self.host());
        withConnection(connection -> {
            try (PreparedStatement renew = connection.prepareStatement("UPDATE " + table + PEERS
                    + " SET application = ?, host = ?, pid = ?, expires_at = " + now + " + ? WHERE instance = ?")) {
                renew.setString(1, application);
                renew.setString(2, host);
                renew.setLong(3, self.pid());
                renew.setLong(4, leaseMicros);
                renew.setString(5, instance);
                if (renew.executeUpdate() > 0) {
                    return null;
                }
            }
            try (PreparedStatement create = connection.prepareStatement("INSERT INTO " + table + PEERS
                    + " (instance, application, host, pid, expires_at) VALUES (?, ?, ?, ?, " + now + " + ?)")) {
                create.setString(1, instance);
                create.setString(2, application);
                create.setString(3, host);
                create.setLong(4, self.pid());
                create.setLong(5, leaseMicros);
                create.executeUpdate();
            }
            try (PreparedStatement forget = connection.prepareStatement("DELETE FROM " + table + PEERS
                    + " WHERE expires_at < " + now + " - ?")) {
                forget.setLong(1, TimeUnit.DAYS.toMicros(1));
                forget.executeUpdate();
            }
            return null;
        });
    }

    private static String clip(String value) {
        return (value.length() <= 255) ? value : value.substring(0, 255);
    }

    /** Deletes this instance's entry. */
    void retire() throws SQLException {
        update("DELETE FROM " + table + PEERS + " WHERE instance = ?", instance);
    }

    /** The instance that announced itself as {@code instanceId} and whose entry has not expired, or {@code null}. */
    @Nullable LockInstance peer(String instanceId) throws SQLException {
        String now = dialect.now();
        return withConnection(connection -> {
            try (PreparedStatement statement = connection.prepareStatement("SELECT application, host, pid FROM " + table
                    + PEERS + " WHERE instance = ? AND expires_at > " + now)) {
                statement.setString(1, instanceId);
                try (ResultSet rows = statement.executeQuery()) {
                    return rows.next() ? new LockInstance(rows.getString(1), rows.getString(2), rows.getLong(3)) : null;
                }
            }
        });
    }

    /**
     * One round trip, {@code SELECT 1}, that the driver gives up on after {@code timeout}: as its query timeout (in
     * whole seconds, at least one) and as the connection's network timeout, where the driver supports one. The query
     * timeout's cancel cannot reach a server behind a dead connection (a half-open socket); the network timeout ends
     * the wait for its answer all the same. The connection's own network timeout is put back for the pool.
     */
    void ping(Duration timeout) throws SQLException {
        int seconds = (int) Math.min(Integer.MAX_VALUE, Math.max(1, (timeout.toMillis() + 999) / 1000));
        int millis = (int) Math.min(Integer.MAX_VALUE, Math.max(1, timeout.toMillis()));
        withConnection(connection -> {
            Integer previous = boundNetworkWait(connection, millis);
            try (PreparedStatement statement = connection.prepareStatement("SELECT 1")) {
                statement.setQueryTimeout(seconds);
                statement.executeQuery().close();
            }
            finally {
                if (previous != null) {
                    try {
                        connection.setNetworkTimeout(Runnable::run, previous);
                    }
                    catch (SQLException ex) {
                        // the connection broke (the driver closed it): nothing to put back
                    }
                }
            }
            return null;
        });
    }

    /**
     * Sets the connection's network timeout to {@code millis}: the timeout it had, or {@code null} when the driver has
     * none to set (then the ping's query timeout is its only bound). The executor runs the change at once, on this
     * thread: the connection is this ping's alone.
     */
    private static @Nullable Integer boundNetworkWait(Connection connection, int millis) {
        try {
            int previous = connection.getNetworkTimeout();
            connection.setNetworkTimeout(Runnable::run, millis);
            return previous;
        }
        catch (SQLException ex) {
            // SQLFeatureNotSupportedException, or a driver that refuses it otherwise: pinged all the same
            return null;
        }
    }

    /** Frees {@code owner}'s lock of {@code key}, if it still holds it (unexpired); whether it did. */
    boolean releaseRow(String key, String owner) throws SQLException {
        return releaseRow(key, owner, false);
    }

    /**
     * Like {@link #releaseRow(String, String)}; when {@code notify} (PostgreSQL only), a release that freed the row
     * also notifies the other instances' listeners, in the same statement and transaction: they hear of it once it is
     * committed, never before.
     */
    boolean releaseRow(String key, String owner, boolean notify) throws SQLException {
        String now = dialect.now();
        String release = "UPDATE " + table + " SET owner = NULL, instance = NULL, expires_at = " + now
                + " WHERE lock_key = ? AND owner = ? AND expires_at > " + now;
        if (!notify || dialect != JdbcDialect.POSTGRESQL) {
            return update(release, key, owner) == 1;
        }
        return withConnection(connection -> {
            try (PreparedStatement statement = connection.prepareStatement("WITH freed AS (" + release
                    + " RETURNING lock_key) SELECT pg_notify(?, ?) FROM freed")) {
                bind(statement, key, owner, channel, payload(RELEASED, key));
                try (ResultSet rows = statement.executeQuery()) {
                    return rows.next();
                }
            }
        });
    }

    /** Raises the token of {@code owner}'s unexpired row of {@code key}: the new token, {@code null} if not held. */
    Long raiseToken(String key, String owner) throws SQLException {
        String now = dialect.now();
        String raise = "UPDATE " + table + " SET token = GREATEST(token + 1, " + now + ") WHERE lock_key = ? AND "
                + "owner = ? AND expires_at > " + now;
        return withConnection(connection -> {
            try (PreparedStatement statement = connection.prepareStatement(raise)) {
                statement.setString(1, key);
                statement.setString(2, owner);
                if (statement.executeUpdate() == 0) {
                    return null;
                }
            }
            // only the holder raises the token, so the row's token is the one just issued, unless the lease
            // ran out in between: then the lock is no longer ours, and no token is handed out
            return dialect.token(connection, table, new JdbcDialect.Grant(key, owner, null, 0, true));
        });
    }

    /** Whether {@code owner} still holds {@code key}, by the database's clock. */
    boolean isHeld(String key, String owner) throws SQLException {
        String now = dialect.now();
        return withConnection(connection -> {
            try (PreparedStatement statement = connection.prepareStatement("SELECT 1 FROM " + table
                    + " WHERE lock_key = ? AND owner = ? AND expires_at > " + now)) {
                statement.setString(1, key);
                statement.setString(2, owner);
                try (ResultSet rows = statement.executeQuery()) {
                    return rows.next();
                }
            }
        });
    }

    /**
     * Renews every live row of this instance but those of {@code excluded} owners by the watchdog timeout, and adds
     * to {@code live} the owners of this instance's rows live after it: on PostgreSQL as the renewal's own answer
     * ({@code RETURNING owner}), elsewhere by a read that follows it on the same connection.
     *
     * @param sent what {@code changes} read before the renewal was sent
     * @param changes read between the renewal and the read that follows it
     * @return the value of {@code changes} the answer judges: {@code sent} on PostgreSQL, else the one read between
     * the two statements
     */
    long renew(Set<String> excluded, Set<String> live, long sent, LongSupplier changes) throws SQLException {
        String now = dialect.now();
        long[] judged = {sent};
        withConnection(connection -> {
            boolean returning = dialect == JdbcDialect.POSTGRESQL;
            try (PreparedStatement statement = connection.prepareStatement(dialect.renewal(table, excluded.size())
                    + (returning ? " RETURNING owner" : ""))) {
                JdbcDialect.bindRenewal(statement, instance, watchdogMicros, excluded);
                if (returning) {
                    readOwners(statement, live);
                    return null;
                }
                statement.executeUpdate();
            }
            judged[0] = changes.getAsLong();
            try (PreparedStatement statement = connection.prepareStatement("SELECT owner FROM " + table
                    + " WHERE instance = ? AND owner IS NOT NULL AND expires_at > " + now)) {
                statement.setString(1, instance);
                readOwners(statement, live);
            }
            return null;
        });
        return judged[0];
    }

    private static void readOwners(PreparedStatement statement, Set<String> owners) throws SQLException {
        try (ResultSet rows = statement.executeQuery()) {
            while (rows.next()) {
                owners.add(rows.getString(1));
            }
        }
    }
}
