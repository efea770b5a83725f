package io.github.distlock.it;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;

/** Records what the template reports, as "kind:key". */
public class RecordingLockListener implements LockListener {

    public final List<String> events = new CopyOnWriteArrayList<>();

    @Override
    public void onAcquired(LockEvent event) {
        events.add("acquired:" + event.key());
    }

    @Override
    public void onNotAcquired(LockEvent event) {
        events.add("notAcquired:" + event.key());
    }

    @Override
    public void onReleased(LockEvent event) {
        events.add("released:" + event.key());
    }

    @Override
    public void onLeaseLost(LockEvent event) {
        events.add("leaseLost:" + event.key());
    }

    @Override
    public void onReleaseFailed(LockEvent event) {
        events.add("releaseFailed:" + event.key());
    }
}
