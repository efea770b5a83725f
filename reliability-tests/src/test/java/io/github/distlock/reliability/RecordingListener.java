package io.github.distlock.reliability;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;

/** Keeps every lock event, by kind, for assertions. */
final class RecordingListener implements LockListener {

    final List<LockEvent> acquired = new CopyOnWriteArrayList<>();
    final List<LockEvent> notAcquired = new CopyOnWriteArrayList<>();
    final List<LockEvent> released = new CopyOnWriteArrayList<>();
    final List<LockEvent> leaseLost = new CopyOnWriteArrayList<>();
    final List<LockEvent> releaseFailed = new CopyOnWriteArrayList<>();

    @Override
    public void onAcquired(LockEvent event) {
        acquired.add(event);
    }

    @Override
    public void onNotAcquired(LockEvent event) {
        notAcquired.add(event);
    }

    @Override
    public void onReleased(LockEvent event) {
        released.add(event);
    }

    @Override
    public void onLeaseLost(LockEvent event) {
        leaseLost.add(event);
    }

    @Override
    public void onReleaseFailed(LockEvent event) {
        releaseFailed.add(event);
    }
}
