package io.github.distlock.aop;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DistributedLock;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Key evaluation alone: the operation lookup (cache hit) and the SpEL key, parsed once, evaluated against a call's
 * arguments. Lives in {@code io.github.distlock.aop} because both are package-private; the package is split across
 * jars on the class path, which plain class-path loading allows.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@State(Scope.Benchmark)
public class KeyEvaluationBenchmark {

    private LockOperationSource source;
    private Method concatMethod;
    private LockOperation concat;
    private LockOperation param;
    private LockOperation property;
    private LockOperation multi;
    private Service target;
    private Object[] userArgs;
    private Object[] orderArgs;
    private Object[] multiArgs;

    @Setup
    public void parse() throws NoSuchMethodException {
        source = new LockOperationSource(null, null, Duration.ZERO, null);
        concatMethod = Service.class.getMethod("concat", String.class);
        concat = source.getOperation(concatMethod, Service.class);
        param = source.getOperation(Service.class.getMethod("param", String.class), Service.class);
        property = source.getOperation(Service.class.getMethod("property", Order.class), Service.class);
        multi = source.getOperation(Service.class.getMethod("multi", String.class, long.class), Service.class);
        target = new Service();
        // built at run time so that no part of the key is a compile-time constant
        String user = "user-" + System.nanoTime() % 1000;
        userArgs = new Object[] {user};
        orderArgs = new Object[] {new Order(user, 42)};
        multiArgs = new Object[] {"acme", 42L};
    }

    /** The cached operation of a method: what the interceptor looks up on every call. */
    @Benchmark
    public LockOperation lookupOperation() {
        return source.getOperation(concatMethod, Service.class);
    }

    /** {@code 'order:' + #userId}: the usual shape. */
    @Benchmark
    public Object concat() {
        return concat.evaluateKey(userArgs, target, Service.class);
    }

    /** {@code #userId}: one variable. */
    @Benchmark
    public Object param() {
        return param.evaluateKey(userArgs, target, Service.class);
    }

    /** {@code 'order:' + #order.id}: a property through reflection. */
    @Benchmark
    public Object property() {
        return property.evaluateKey(orderArgs, target, Service.class);
    }

    /** {@code 'tenant:' + #tenant + ':item:' + #itemId}: four parts, one a long. */
    @Benchmark
    public Object multi() {
        return multi.evaluateKey(multiArgs, target, Service.class);
    }

    /** Baseline: the same key by hand. */
    @Benchmark
    public String handWritten() {
        return "order:" + userArgs[0];
    }

    /** The annotated methods whose keys are evaluated. */
    public static class Service {

        @DistributedLock(key = "'order:' + #userId")
        public void concat(String userId) {
        }

        @DistributedLock(key = "#userId")
        public void param(String userId) {
        }

        @DistributedLock(key = "'order:' + #order.id")
        public void property(Order order) {
        }

        @DistributedLock(key = "'tenant:' + #tenant + ':item:' + #itemId")
        public void multi(String tenant, long itemId) {
        }
    }

    /** A JavaBean argument, read through a getter as most application types are. */
    public static final class Order {

        private final String id;
        private final long amount;

        Order(String id, long amount) {
            this.id = id;
            this.amount = amount;
        }

        public String getId() {
            return id;
        }

        public long getAmount() {
            return amount;
        }
    }
}
