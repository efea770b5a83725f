package io.github.distlock.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * The PostgreSQL listener of one provider: one connection ({@link JdbcListenerConnections}: outside the application's
 * pool where it can be), held for as long as the provider lives, that {@code LISTEN}s on its table's channel on a daemon thread of its own, and wakes this instance's first
 * waiter of a key another instance released ({@link JdbcWaiters#wake}), or marks a key another instance waits for
 * ({@link JdbcWaiters#remoteWaiter}). A connection that breaks (the server restarted, the backend was terminated) is
 * replaced, {@code LISTEN}ed again, and every waiter woken once, for the notifications missed meanwhile; until then the
 * waiters' polls find the releases, as they do on the databases without notifications. Notifications of this instance's
 * own are left alone: its releases wake its waiters directly.
 *
 * <p>Only loaded when the database is PostgreSQL and its driver (pgjdbc) is on the class path (see
 * {@link JdbcLockProvider}): it refers to the driver's classes.
 */
final class JdbcListener {

    // the provider's category: where users look for (and configure) its messages
    private static final Log logger = LogFactory.getLog(JdbcLockProvider.class);

    /** How long one wait for notifications lasts: how soon the thread sees that the provider closed. */
    private static final int WAIT_MILLIS = 250;

    /** A connection silent this long is checked ({@link Connection#isValid}): a half-open one would stay silent. */
    private static final long CHECK_NANOS = TimeUnit.SECONDS.toNanos(10);

    private static final long MIN_RECONNECT_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final long MAX_RECONNECT_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final JdbcListenerConnections connections;
    private final String channel;
    private final String instance;
    private final JdbcWaiters waiters;
    private final Thread thread;
    private volatile boolean closed;
    /** Whether a connection listens now. */
    private volatile boolean listening;
    /** How many times a connection started listening (for tests). */
    private volatile int listened;
    /** Whether a failure was logged at WARN already: the next ones go to DEBUG, the waiters polling meanwhile. */
    private boolean warned;
    /** The backend process of the listening connection, or 0 (for tests). */
    private volatile int backendPid;

    JdbcListener(JdbcListenerConnections connections, String channel, String instance, JdbcWaiters waiters) {
        this.connections = connections;
        this.channel = channel;
        this.instance = instance;
        this.waiters = waiters;
        this.thread = new Thread(this::run, "distlock-jdbc-listener");
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    boolean listening() {
        return listening;
    }

    String channelName() {
        return channel;
    }

    int connections() {
        return listened;
    }

    int backendPid() {
        return backendPid;
    }

    /**
     * Stops listening: the thread gives its connection back at the end of its current wait, within a quarter second,
     * not waited for (a pool closed meanwhile aborts the connection, which ends the wait at once).
     */
    void close() {
        closed = true;
        synchronized (this) {
            notifyAll();
        }
    }

    private void run() {
        long backoff = MIN_RECONNECT_NANOS;
        while (!closed) {
            try (Connection connection = connections.open()) {
                try {
                    PGConnection notifications = connection.unwrap(PGConnection.class);
                    if (!connection.getAutoCommit()) {
                        // a pool configured without autocommit: LISTEN takes effect at commit
                        connection.setAutoCommit(true);
                    }
                    try (Statement statement = connection.createStatement()) {
                        statement.execute("LISTEN " + channel);
                    }
                    backendPid = notifications.getBackendPID();
                    listening = true;
                    listened++;
                    backoff = MIN_RECONNECT_NANOS;
                    // releases while no connection listened were not heard: every first waiter tries once
                    waiters.wakeAll();
                    listen(connection, notifications);
                }
                finally {
                    if (connections.pooled()) {
                        unlisten(connection);
                    }
                }
            }
            catch (SQLException | RuntimeException ex) {
                if (!closed) {
                    failed(ex);
                }
            }
            finally {
                listening = false;
                backendPid = 0;
            }
            if (!closed) {
                pause(backoff);
                backoff = Math.min(backoff * 2, MAX_RECONNECT_NANOS);
            }
        }
    }

    /**
     * A pooled connection goes back to the pool listening no more: its next borrower's driver would otherwise collect
     * the channel's notifications for as long as the connection lives.
     */
    private void unlisten(Connection connection) {
        try {
            if (!connection.isClosed()) {
                try (Statement statement = connection.createStatement()) {
                    statement.execute("UNLISTEN *");
                }
            }
        }
        catch (SQLException | RuntimeException ex) {
            // a broken connection: the pool discards it, and its server session with it
            logger.debug("UNLISTEN on the listener's connection failed; the pool discards a broken connection", ex);
        }
    }

    private void failed(Exception ex) {
        String message = "Listening for other instances' lock releases on channel " + channel + " failed ("
                + ex.getMessage() + "); this instance's waiters poll for them until a connection listens again";
        if (!warned) {
            warned = true;
            logger.warn(message, ex);
        }
        else {
            logger.debug(message, ex);
        }
    }

    private void listen(Connection connection, PGConnection notifications) throws SQLException {
        long heardAt = System.nanoTime();
        while (!closed) {
            PGNotification[] heard = notifications.getNotifications(WAIT_MILLIS);
            long now = System.nanoTime();
            if (heard != null && heard.length > 0) {
                heardAt = now;
                for (PGNotification notification : heard) {
                    dispatch(notification.getParameter());
                }
            }
            else if (now - heardAt > CHECK_NANOS) {
                if (!connection.isValid((int) TimeUnit.NANOSECONDS.toSeconds(CHECK_NANOS))) {
                    throw new SQLException("the listening connection no longer answers");
                }
                heardAt = now;
            }
            waiters.forgetStaleRemoteWaiters();
        }
    }

    private void dispatch(@Nullable String payload) {
        int keyStart = 1 + instance.length();
        if (payload == null || payload.length() < keyStart || payload.startsWith(instance, 1)) {
            // another table's instances on the same channel name cannot send this; nor does this instance need it
            return;
        }
        String key = payload.substring(keyStart);
        if (payload.charAt(0) == JdbcLockRepository.RELEASED) {
            waiters.wake(key);
        }
        else if (payload.charAt(0) == JdbcLockRepository.WAITING) {
            waiters.remoteWaiter(key);
        }
    }

    private synchronized void pause(long nanos) {
        try {
            TimeUnit.NANOSECONDS.timedWait(this, nanos);
        }
        catch (InterruptedException ex) {
            closed = true;
        }
    }
}
