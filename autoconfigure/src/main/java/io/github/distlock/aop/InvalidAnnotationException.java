package io.github.distlock.aop;

/**
 * An invalid attribute of an annotation that distlock's advice reads ({@link io.github.distlock.DistributedLock},
 * {@code @Idempotent}), with what to do about it: the startup report prints both.
 *
 * <p>Internal API of distlock's modules: thrown while an {@link AbstractOperationSource} parses an annotation, and
 * read by {@link AbstractMethodValidator}. Not for applications.
 */
public class InvalidAnnotationException extends IllegalArgumentException {

    private final String action;

    /**
     * @param message what is wrong, naming the attribute (the method is added by the caller)
     * @param action what to do about it
     */
    public InvalidAnnotationException(String message, String action) {
        this(message, action, null);
    }

    /**
     * @param message what is wrong, naming the attribute (the method is added by the caller)
     * @param action what to do about it
     * @param cause the failure that showed it, or {@code null}
     */
    public InvalidAnnotationException(String message, String action, Throwable cause) {
        super(message, cause);
        this.action = action;
    }

    /** What to do about it. */
    public String action() {
        return action;
    }
}
