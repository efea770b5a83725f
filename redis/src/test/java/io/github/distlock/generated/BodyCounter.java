package io.github.distlock.generated;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** Bodies of generated classes that ran, by class: counted by the test, not by the library. */
public final class BodyCounter {

    static final Map<String, AtomicInteger> RAN = new ConcurrentHashMap<>();

    private BodyCounter() {
    }

    /** Called by the generated bodies. */
    public static void ran(String bean) {
        RAN.computeIfAbsent(bean, b -> new AtomicInteger()).incrementAndGet();
    }

    static int runs(String bean) {
        AtomicInteger count = RAN.get(bean);
        return (count != null) ? count.get() : 0;
    }
}
