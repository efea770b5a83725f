package io.github.distlock.test;

/**
 * The failure an {@link InMemoryLockProvider} answers with when a test told it to fail
 * ({@link LockFaults#failNextAcquisitions}, {@link LockFaults#failNextReleases}), as a real client reports a backend it
 * cannot reach. The template turns a failed acquisition into a {@link io.github.distlock.LockBackendException} whose
 * cause is this, and reports a failed release to listeners ({@code onReleaseFailed}) with it.
 */
public class SimulatedBackendFailure extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** @param message what failed and which fault asked for it */
    public SimulatedBackendFailure(String message) {
        super(message);
    }
}
