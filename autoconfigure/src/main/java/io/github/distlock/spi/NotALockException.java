package io.github.distlock.spi;

/**
 * Thrown by a {@link LockInspector} asked about a key that exists in the backend but is not one of its locks (in
 * Redis: a key of another type, or a hash that does not look like a Redisson lock, such as a web session when
 * {@code distlock.key-prefix} is empty). Nothing was read or deleted. Its message never contains the key.
 */
public class NotALockException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message why the key is not a lock, without the key
     */
    public NotALockException(String message) {
        super(message);
    }
}
