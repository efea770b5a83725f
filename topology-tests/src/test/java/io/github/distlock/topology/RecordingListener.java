package io.github.distlock.topology;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;

/** Keeps every lock event, by kind, with the time it arrived, for assertions and measurements. */
final class RecordingListener implements LockListener {

    /** An event and {@link System#nanoTime()} when the listener got it. */
    record Received(LockEvent event, long at) {
    }

    final List<Received> acquired = new CopyOnWriteArrayList<>();
    final List<Received> notAcquired = new CopyOnWriteArrayList<>();
    final List<Received> released = new CopyOnWriteArrayList<>();
    final List<Received> leaseLost = new CopyOnWriteArrayList<>();
    final List<Received> releaseFailed = new CopyOnWriteArrayList<>();

    @Override
    public void onAcquired(LockEvent event) {
        acquired.add(new Received(event, System.nanoTime()));
    }

    @Override
    public void onNotAcquired(LockEvent event) {
        notAcquired.add(new Received(event, System.nanoTime()));
    }

    @Override
    public void onReleased(LockEvent event) {
        released.add(new Received(event, System.nanoTime()));
    }

    @Override
    public void onLeaseLost(LockEvent event) {
        leaseLost.add(new Received(event, System.nanoTime()));
    }

    @Override
    public void onReleaseFailed(LockEvent event) {
        releaseFailed.add(new Received(event, System.nanoTime()));
    }

    /** Whether a lease-lost event names {@code fullKey}. */
    boolean lost(String fullKey) {
        return leaseLost.stream().anyMatch(received -> received.event().key().equals(fullKey));
    }
}
