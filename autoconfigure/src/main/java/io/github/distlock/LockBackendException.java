package io.github.distlock;

/**
 * The lock backend (Redis, the database, ZooKeeper, etcd) could not be asked for the lock: it is unreachable, timed
 * out or refused the command. The guarded code did not run. Usually transient: a web application maps it to 503
 * rather than 409.
 */
public class LockBackendException extends DistributedLockException {

    /**
     * @param key the full key of the lock
     * @param cause what the backend client reported
     */
    public LockBackendException(String key, Throwable cause) {
        super(key, "Could not acquire lock '" + key + "': the lock backend failed: " + cause, cause);
    }
}
