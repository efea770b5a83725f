package io.github.distlock.jdbc;

/**
 * A statement of the jdbc lock backend failed (the database is unreachable, the pool timed out, the table is not as the
 * schema script makes it). {@link io.github.distlock.LockTemplate} reports it as a
 * {@link io.github.distlock.LockBackendException}: never as "not acquired".
 */
public class JdbcLockException extends RuntimeException {

    /**
     * @param message what was being done, naming the key and the table
     * @param cause the driver's or pool's exception
     */
    public JdbcLockException(String message, Throwable cause) {
        super(message + ": " + cause, cause);
    }
}
