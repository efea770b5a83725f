package com.example.smoke;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockEvent;
import io.github.distlock.LockListener;
import io.github.distlock.LockOptions;
import io.github.distlock.LockTemplate;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * Takes the README's lock once and holds it while run.sh inspects Redis, checks that a second caller is refused, and
 * (on Java 21+) runs locked calls on virtual threads. Prints "SMOKE ..." lines that run.sh reads; any failure ends the
 * application with a non-zero exit code.
 */
@SpringBootApplication
public class SmokeApplication {

    private static final long USER_ID = 42;

    public static void main(String[] args) {
        int code;
        try {
            code = SpringApplication.exit(SpringApplication.run(SmokeApplication.class, args));
        }
        catch (Throwable ex) {
            ex.printStackTrace();
            code = 1;
        }
        System.exit(code);
    }

    /** What distlock itself reports: the full Redis key of every lock acquired and released. */
    @Bean
    Events events() {
        return new Events();
    }

    @Bean
    ApplicationRunner smoke(OrderService orders, WhileHeld whileHeld, Events events, LockTemplate locks,
            @Value("${smoke.virtual-threads:true}") boolean virtualThreads) {
        return args -> {
            ExecutorService caller = Executors.newSingleThreadExecutor();
            try {
                Future<Order> first = caller.submit(() -> orders.placeOrder(USER_ID, new OrderRequest("first")));
                if (!whileHeld.awaitEntered(Duration.ofSeconds(60))) {
                    first.get(1, TimeUnit.SECONDS); // surfaces the call's own failure, if it has one
                    throw new IllegalStateException("SMOKE FAIL: the locked method did not start within 60 s");
                }
                if (events.acquired.size() != 1) {
                    throw new IllegalStateException("SMOKE FAIL: expected one acquisition, got " + events.acquired);
                }
                String key = events.acquired.get(0);

                try {
                    orders.placeOrder(USER_ID, new OrderRequest("second"));
                    throw new IllegalStateException("SMOKE FAIL: a second call on the held key returned");
                }
                catch (LockAcquisitionException expected) {
                    if (!expected.getMessage().contains(key)) {
                        throw new IllegalStateException("SMOKE FAIL: the refusal does not name " + key, expected);
                    }
                    say("contended " + expected.getClass().getSimpleName() + ": " + expected.getMessage());
                }

                say("held " + key); // run.sh now looks at the key in Redis, then creates the release file
                Order order = first.get(90, TimeUnit.SECONDS);
                if (!events.released.contains(key)) {
                    throw new IllegalStateException("SMOKE FAIL: no release reported for " + key + ": " + events.released);
                }
                say("released " + key + " after placing " + order);
            }
            finally {
                caller.shutdownNow();
            }
            if (virtualThreads) {
                virtualThreads(locks);
            }
            say("done");
        };
    }

    /**
     * Java 21+: 100 calls on virtual threads contend for one key through LockTemplate; they must run one at a time and
     * all of them. Found by reflection, so that the application still compiles for Java 17.
     */
    static void virtualThreads(LockTemplate locks) throws Exception {
        Method newExecutor;
        Method isVirtual;
        try {
            newExecutor = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
            isVirtual = Thread.class.getMethod("isVirtual");
        }
        catch (NoSuchMethodException ex) {
            say("virtual-threads skipped: Java " + Runtime.version().feature() + " has none");
            return;
        }
        int calls = 100;
        Counter counter = new Counter();
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        AtomicInteger onVirtual = new AtomicInteger();
        long start = System.nanoTime();
        ExecutorService executor = (ExecutorService) newExecutor.invoke(null);
        try {
            List<Future<Object>> results = new ArrayList<>();
            for (int i = 0; i < calls; i++) {
                results.add(executor.submit(() -> {
                    locks.run("smoke:virtual", LockOptions.waitFor(Duration.ofSeconds(60)), () -> {
                        if ((Boolean) isVirtual.invoke(Thread.currentThread())) {
                            onVirtual.incrementAndGet();
                        }
                        maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                        int seen = counter.value;
                        Thread.sleep(1); // a lost update shows if two bodies ever overlap
                        counter.value = seen + 1;
                        inside.decrementAndGet();
                    });
                    return null;
                }));
            }
            for (Future<Object> result : results) {
                result.get(120, TimeUnit.SECONDS);
            }
        }
        finally {
            executor.shutdownNow();
        }
        if (counter.value != calls || maxInside.get() != 1 || onVirtual.get() != calls) {
            throw new IllegalStateException("SMOKE FAIL: virtual threads: counter " + counter.value + " of " + calls
                    + ", at most " + maxInside + " inside at once, " + onVirtual + " on virtual threads");
        }
        say("virtual-threads " + calls + " locked calls on virtual threads, one at a time, none lost, in "
                + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + " ms (Java " + Runtime.version().feature()
                + ")");
    }

    static void say(String line) {
        System.out.println("SMOKE " + line);
        System.out.flush();
    }

    static final class Counter {
        volatile int value;
    }

    static final class Events implements LockListener {

        final List<String> acquired = new CopyOnWriteArrayList<>();
        final List<String> released = new CopyOnWriteArrayList<>();

        @Override
        public void onAcquired(LockEvent event) {
            acquired.add(event.key());
        }

        @Override
        public void onReleased(LockEvent event) {
            released.add(event.key());
        }
    }
}
