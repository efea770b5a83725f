package io.github.distlock;

import org.jspecify.annotations.Nullable;

/**
 * A mistake distlock finds at startup (an invalid annotation, no lock backend, a backend it can't reach when told to
 * require it): it stops the application, and Spring Boot prints its {@link #getDescription() description} and
 * {@link #getAction() action} as an "APPLICATION FAILED TO START" report.
 */
public class DistlockConfigurationException extends RuntimeException {

    private final String description;
    private final String action;

    /**
     * @param description what is wrong, naming the method or property
     * @param action what to change
     * @param cause the underlying failure, or {@code null}
     */
    public DistlockConfigurationException(String description, String action, @Nullable Throwable cause) {
        super(description + " Action: " + action, cause);
        this.description = description;
        this.action = action;
    }

    /** What is wrong, naming the method or property. */
    public String getDescription() {
        return description;
    }

    /** What to change. */
    public String getAction() {
        return action;
    }
}
