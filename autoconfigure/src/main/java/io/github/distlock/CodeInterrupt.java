package io.github.distlock;

import java.util.function.Consumer;

/**
 * The stop of a blocking call whose {@link LeaseLostPolicy} is {@code INTERRUPT} (or {@code CANCEL}): interrupts the
 * thread that runs the call's code, once, and never after the code returned. Created on that thread.
 */
final class CodeInterrupt implements Consumer<LockLeaseLostException> {

    private final Thread thread = Thread.currentThread();
    /** Under {@code this}: the interrupt and the end of the code exclude each other. */
    private boolean running = true;
    private LockLeaseLostException delivered;

    /** The thread was interrupted already when the loss came (a cancellation, a shutdown): that one is kept. */
    private boolean interruptedBefore;

    @Override
    public synchronized void accept(LockLeaseLostException loss) {
        if (running && delivered == null) {
            delivered = loss;
            interruptedBefore = thread.isInterrupted();
            thread.interrupt();
        }
    }

    /**
     * Called on the code's thread when the code has returned or thrown: no interrupt comes after this, and one that
     * came is taken back (the code may have finished without looking at it), so that it never reaches what the thread
     * runs next; an interrupt the thread already had when the loss came (another party's) is left as it was.
     *
     * @return the loss that interrupted the code, or {@code null}
     */
    synchronized LockLeaseLostException codeReturned() {
        running = false;
        if (delivered != null && !interruptedBefore) {
            Thread.interrupted();
        }
        return delivered;
    }
}
