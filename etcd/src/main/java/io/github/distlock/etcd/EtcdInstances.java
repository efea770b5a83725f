package io.github.distlock.etcd;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.github.distlock.spi.LockInstance;
import org.jspecify.annotations.Nullable;

/**
 * This instance's announcement: {@code <namespace>%instances/<client id>} holding the {@link LockInstance}, on the
 * session lease, so that it expires with the instance (and is deleted when the provider closes, which revokes the
 * lease). A new session lease (after a loss) gets it again; a write that fails is tried again every second.
 */
final class EtcdInstances {

    private final EtcdLockProvider provider;
    private final EtcdLockRepository repository;
    private volatile @Nullable LockInstance announced;
    /** One write (or its retry) at a time: an unreachable etcd gets no pile of them. */
    private final AtomicBoolean writing = new AtomicBoolean();
    /** Set when a write is asked for while one is under way: the one under way writes again when it ends. */
    private final AtomicBoolean again = new AtomicBoolean();

    EtcdInstances(EtcdLockProvider provider, EtcdLockRepository repository) {
        this.provider = provider;
        this.repository = repository;
    }

    void announce(LockInstance self) {
        announced = Objects.requireNonNull(self, "announce(self): self must not be null");
        write();
    }

    /** The session lease was lost: its announcement goes with it; put it on the next one. */
    void sessionLost() {
        if (announced != null) {
            write();
        }
    }

    private void write() {
        again.set(true);
        if (provider.isClosed() || !writing.compareAndSet(false, true)) {
            return;
        }
        again.set(false);
        LockInstance self = Objects.requireNonNull(announced);
        provider.sessions().current()
                .thenCompose(session -> repository.put(EtcdLockProvider.bytes(provider.instanceKey()),
                        EtcdLockProvider.bytes(encode(self)), session.leaseId).thenApply(put -> session))
                .whenComplete((session, failure) -> {
                    writing.set(false);
                    if (failure != null || session.lost.get()) {
                        retryLater();
                    }
                    else if (again.get()) {
                        write();
                    }
                });
    }

    private void retryLater() {
        if (provider.isClosed()) {
            return;
        }
        try {
            provider.schedule(this::write, TimeUnit.SECONDS.toNanos(1));
        }
        catch (IllegalStateException closed) {
            // closed meanwhile: nothing more to announce
        }
    }

    /** {@code application=..&host=..&pid=..}, each part URL-encoded: any name survives, and it stays readable. */
    static String encode(LockInstance instance) {
        return "application=" + URLEncoder.encode(instance.application(), StandardCharsets.UTF_8) + "&host="
                + URLEncoder.encode(instance.host(), StandardCharsets.UTF_8) + "&pid=" + instance.pid();
    }

    /** The instance of {@link #encode}, or {@code null} for anything else. */
    static @Nullable LockInstance decode(String entry) {
        Map<String, String> parts = new HashMap<>();
        for (String part : entry.split("&")) {
            int equals = part.indexOf('=');
            if (equals > 0) {
                parts.put(part.substring(0, equals), URLDecoder.decode(part.substring(equals + 1), StandardCharsets.UTF_8));
            }
        }
        String application = parts.get("application");
        String host = parts.get("host");
        if (application == null || host == null) {
            return null;
        }
        try {
            return new LockInstance(application, host, Long.parseLong(parts.getOrDefault("pid", "-1")));
        }
        catch (IllegalArgumentException notANumber) {
            return null;
        }
    }
}
