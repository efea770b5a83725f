package io.github.distlock.aop;

/**
 * An invalid {@link io.github.distlock.DistributedLock}, with what to do about it.
 */
final class LockAnnotationException extends IllegalArgumentException {

    private final String action;

    LockAnnotationException(String message, String action) {
        super(message);
        this.action = action;
    }

    LockAnnotationException(String message, String action, Throwable cause) {
        super(message, cause);
        this.action = action;
    }

    String action() {
        return action;
    }
}
