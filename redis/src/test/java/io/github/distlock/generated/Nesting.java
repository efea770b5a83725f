package io.github.distlock.generated;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockContext;
import io.github.distlock.LockType;
import io.github.distlock.generated.Probe.Kind;
import io.github.distlock.generated.Probe.Mode;

/**
 * Three beans calling each other, up to three levels, with mixed options: a fenced FAIR lock, a fenced WRITE lock with
 * a fixed lease in the string form, and an unfenced WRITE lock that either takes a key of its own or re-enters the
 * middle one's.
 */
final class Nesting {

    private Nesting() {
    }

    /** What each level saw: its fencing token and the keys its thread held. */
    record Seen(String level, OptionalLong token, List<String> heldKeys) {
    }

    static final Map<String, List<Seen>> SEEN = new ConcurrentHashMap<>();

    private static void record(String k, String level, OptionalLong token) {
        SEEN.computeIfAbsent(k, key -> new java.util.concurrent.CopyOnWriteArrayList<>())
                .add(new Seen(level, token, LockContext.heldKeys()));
    }

    public static class Outer {
        private final Middle middle;

        public Outer(Middle middle) {
            this.middle = middle;
        }

        @DistributedLock(key = "'n1:' + #k", type = LockType.FAIR, fenced = true, waitTime = 0)
        public String one(String k, int depth, boolean same, Mode innerMode) {
            Probe.INSTANCE.fenced("n1:" + k);
            Probe.Ticket ticket = Probe.INSTANCE.enter("n1:" + k, Kind.EXCLUSIVE,
                    LockContext.fencingToken("lock:n1:" + k), true, true);
            try {
                record(k, "one", LockContext.fencingToken());
                return "one(" + ((depth > 1) ? middle.two(k, depth, same, innerMode) : "") + ")";
            }
            finally {
                ticket.exit();
            }
        }
    }

    public static class Middle {
        private final Inner inner;

        public Middle(Inner inner) {
            this.inner = inner;
        }

        @DistributedLock(key = "'n2:' + #k", type = LockType.WRITE, fenced = true, waitTime = 0,
                leaseTimeString = "30s")
        public String two(String k, int depth, boolean same, Mode innerMode) {
            Probe.INSTANCE.fenced("n2:" + k);
            Probe.Ticket ticket = Probe.INSTANCE.enter("n2:" + k, Kind.EXCLUSIVE,
                    LockContext.fencingToken("lock:n2:" + k), true, true);
            try {
                record(k, "two", LockContext.fencingToken());
                return "two(" + ((depth > 2) ? inner.three(k, same, innerMode) : "") + ")";
            }
            finally {
                ticket.exit();
            }
        }
    }

    public static class Inner {

        @DistributedLock(key = "#same ? 'n2:' + #k : 'n3:' + #k", type = LockType.WRITE,
                waitTimeString = "${palette.wait}")
        public String three(String k, boolean same, Mode mode) {
            String key = same ? "n2:" + k : "n3:" + k;
            record(k, "three", LockContext.fencingToken());
            if (same) {
                // re-entered: the middle level's ticket stands for this thread's hold
                Probe.INSTANCE.holdIfAsked(key, mode);
                return "three";
            }
            Probe.Ticket ticket = Probe.INSTANCE.enter(key, Kind.EXCLUSIVE, OptionalLong.empty(), true, true);
            try {
                Probe.INSTANCE.holdIfAsked(key, mode);
                return "three";
            }
            finally {
                ticket.exit();
            }
        }
    }
}
