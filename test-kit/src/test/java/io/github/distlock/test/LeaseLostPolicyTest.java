package io.github.distlock.test;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.DistributedLock;
import io.github.distlock.LeaseLostPolicy;
import io.github.distlock.LockLeaseLostException;
import io.github.distlock.LockOptions;
import io.github.distlock.aop.DistributedLockAdvisor;
import io.github.distlock.aop.DistributedLockInterceptor;
import io.github.distlock.aop.LockOperationSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.springframework.aop.framework.ProxyFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * What {@link LeaseLostPolicy} does to the code of a call whose lock the backend reports lost, through the template
 * and {@code @DistributedLock}, on in-memory locks told to lose the lease.
 */
class LeaseLostPolicyTest {

    private final InMemoryLockProvider locks = new InMemoryLockProvider(Duration.ofSeconds(1));
    private final DefaultLockTemplate template = new DefaultLockTemplate(locks, "lock:", Duration.ZERO, null, List.of());
    private final ExecutorService pool = Executors.newSingleThreadExecutor();
    private final LockOptions interrupt = LockOptions.DEFAULTS.withLeaseLostPolicy(LeaseLostPolicy.INTERRUPT);

    @AfterEach
    void close() {
        pool.shutdownNow();
        template.shutdown();
        locks.close();
    }

    // ---------------------------------------------------------------- blocking code

    @Test
    void interruptStopsTheRunningCodeAtOnceAndTheCallFailsNamingTheKey() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        Future<Object> call = pool.submit(() -> template.execute("job", interrupt, () -> {
            running.countDown();
            new CountDownLatch(1).await();
            return "never";
        }));
        assertThat(running.await(5, TimeUnit.SECONDS)).isTrue();

        long lostAt = System.nanoTime();
        locks.onKey("lock:job").loseLease();

        assertThatThrownBy(() -> call.get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(LockLeaseLostException.class)
                .hasMessageStartingWith("Lock 'lock:job' was lost while its code ran (its lease was lost")
                .hasCauseInstanceOf(InterruptedException.class);
        assertThat(Duration.ofNanos(System.nanoTime() - lostAt)).as("stopped long before a renewal period")
                .isLessThan(Duration.ofMillis(300));
        assertThat(pool.submit(() -> Thread.currentThread().isInterrupted()).get()).as("the next task").isFalse();
        LockAssert.assertNoLocksHeld(locks);
    }

    @Test
    void codeThatFinishesInSpiteOfTheInterruptKeepsItsResultAndWhatItsThreadRunsNextIsNotInterrupted()
            throws Exception {
        AtomicBoolean sawInterrupt = new AtomicBoolean();
        CountDownLatch running = new CountDownLatch(1);
        // the task's own next step, not the pool's next task: ThreadPoolExecutor clears interrupts between tasks
        Future<String> call = pool.submit(() -> template.execute("job", interrupt, () -> {
            running.countDown();
            // code that never blocks, and only notices its interrupt status
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (!Thread.currentThread().isInterrupted() && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            sawInterrupt.set(Thread.currentThread().isInterrupted());
            return "done";
        }) + ", interrupted afterwards: " + Thread.currentThread().isInterrupted());
        assertThat(running.await(5, TimeUnit.SECONDS)).isTrue();
        locks.onKey("lock:job").loseLease();

        assertThat(call.get(5, TimeUnit.SECONDS)).isEqualTo("done, interrupted afterwards: false");
        assertThat(sawInterrupt).isTrue();
    }

    @Test
    void anInterruptTheThreadAlreadyHadWhenTheLossCameIsKept() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch lost = new CountDownLatch(1);
        Future<String> call = pool.submit(() -> template.execute("job", interrupt, () -> {
            // another party's interrupt (a cancellation, a shutdown) arrives first, and the code does not look at it
            Thread.currentThread().interrupt();
            running.countDown();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (lost.getCount() > 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            return "done";
        }) + ", interrupted afterwards: " + Thread.currentThread().isInterrupted());
        assertThat(running.await(5, TimeUnit.SECONDS)).isTrue();
        locks.onKey("lock:job").loseLease();
        lost.countDown();

        assertThat(call.get(5, TimeUnit.SECONDS)).isEqualTo("done, interrupted afterwards: true");
    }

    @Test
    void aLossReportedAfterTheCodeReturnedInterruptsNothing() throws Exception {
        // the minimum hold keeps the lock after the code returned, so its loss is reported then
        LockOptions heldOn = interrupt.withHoldAtLeast(Duration.ofSeconds(30));
        assertThat(pool.submit(() -> template.execute("job", heldOn, () -> "done")).get()).isEqualTo("done");
        CountDownLatch nextTaskRunning = new CountDownLatch(1);
        CountDownLatch lost = new CountDownLatch(1);
        Future<Boolean> nextTask = pool.submit(() -> {
            nextTaskRunning.countDown();
            lost.await();
            return Thread.currentThread().isInterrupted();
        });
        assertThat(nextTaskRunning.await(5, TimeUnit.SECONDS)).isTrue();

        locks.onKey("lock:job").loseLease();
        lost.countDown();

        assertThat(nextTask.get(5, TimeUnit.SECONDS)).as("the next task on the call's thread").isFalse();
    }

    @Test
    void reportOnlyLetsTheCodeRunOn() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch lost = new CountDownLatch(1);
        Future<Boolean> call = pool.submit(() -> template.execute("job", LockOptions.DEFAULTS, () -> {
            running.countDown();
            lost.await();
            return Thread.currentThread().isInterrupted();
        }));
        assertThat(running.await(5, TimeUnit.SECONDS)).isTrue();
        locks.onKey("lock:job").loseLease();
        lost.countDown();
        assertThat(call.get(5, TimeUnit.SECONDS)).as("interrupted").isFalse();
    }

    @Test
    void interruptReachesAVirtualThread() throws Exception {
        ExecutorService virtual;
        try {
            virtual = (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        }
        catch (NoSuchMethodException ex) {
            Assumptions.abort("no virtual threads before Java 21");
            return;
        }
        try {
            CountDownLatch running = new CountDownLatch(1);
            Future<Object> call = virtual.submit(() -> template.execute("job", interrupt, () -> {
                running.countDown();
                new CountDownLatch(1).await();
                return "never";
            }));
            assertThat(running.await(5, TimeUnit.SECONDS)).isTrue();
            locks.onKey("lock:job").loseLease();
            assertThatThrownBy(() -> call.get(5, TimeUnit.SECONDS)).cause().isInstanceOf(LockLeaseLostException.class)
                    .hasCauseInstanceOf(InterruptedException.class);
        }
        finally {
            virtual.shutdownNow();
        }
    }

    // ---------------------------------------------------------------- asynchronous code

    @Test
    void cancelCancelsTheFutureTheCodeReturnedAndReleases() throws Exception {
        CompletableFuture<String> work = new CompletableFuture<>();
        CompletableFuture<String> call = template.executeAsync("job",
                LockOptions.DEFAULTS.withLeaseLostPolicy(LeaseLostPolicy.CANCEL), () -> work);

        locks.onKey("lock:job").loseLease();

        await().atMost(Duration.ofSeconds(5)).until(work::isCancelled);
        assertThatThrownBy(() -> call.get(5, TimeUnit.SECONDS)).cause().isInstanceOf(LockLeaseLostException.class)
                .hasCauseInstanceOf(CancellationException.class)
                .extracting(ex -> ((LockLeaseLostException) ex).getKey()).isEqualTo("lock:job");
        LockAssert.assertNoLocksHeld(locks);
    }

    @Test
    void aPolicyWithNoCodeToStopIsRefusedByTheTemplate() {
        assertThatThrownBy(() -> template.executeAsync("job", interrupt, () -> new CompletableFuture<>()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("executeAsync cannot use LeaseLostPolicy.INTERRUPT");
        assertThat(template.acquireAsync(List.of("job"), LockOptions.DEFAULTS.withLeaseLostPolicy(LeaseLostPolicy.CANCEL)))
                .failsWithin(Duration.ofSeconds(1)).withThrowableThat().havingCause()
                .isInstanceOf(IllegalArgumentException.class)
                .withMessageStartingWith("acquireAsync cannot use LeaseLostPolicy.CANCEL");
    }

    // ---------------------------------------------------------------- @DistributedLock

    /** Methods whose lock a test loses while they run. */
    public static class Jobs {

        final CountDownLatch running = new CountDownLatch(1);
        final AtomicLong cancelled = new AtomicLong();

        @DistributedLock(key = "'blocking'", onLeaseLost = LeaseLostPolicy.CANCEL)
        public String blocking() throws InterruptedException {
            running.countDown();
            new CountDownLatch(1).await();
            return "never";
        }

        @DistributedLock(key = "'mono'", onLeaseLost = LeaseLostPolicy.CANCEL)
        public Mono<String> mono() {
            return Mono.<String>never().doOnSubscribe(s -> running.countDown()).doOnCancel(cancelled::incrementAndGet);
        }

        @DistributedLock(key = "'flux'", onLeaseLost = LeaseLostPolicy.CANCEL)
        public Flux<String> flux() {
            return Flux.<String>never().startWith("first").doOnSubscribe(s -> running.countDown())
                    .doOnCancel(cancelled::incrementAndGet);
        }

        @DistributedLock(key = "'future'", onLeaseLost = LeaseLostPolicy.INTERRUPT)
        public CompletableFuture<String> interruptsAFuture() {
            return new CompletableFuture<>();
        }

        @DistributedLock(key = "'stage'", onLeaseLost = LeaseLostPolicy.CANCEL)
        public CompletionStage<String> cancelsAStage() {
            return new CompletableFuture<>();
        }
    }

    private Jobs proxy(Jobs jobs) {
        LockOperationSource operations = new LockOperationSource(null, null, Duration.ZERO, null);
        ProxyFactory factory = new ProxyFactory(jobs);
        factory.setProxyTargetClass(true);
        factory.addAdvisor(new DistributedLockAdvisor(
                new DistributedLockInterceptor(() -> operations, () -> template), 0));
        return (Jobs) factory.getProxy();
    }

    @Test
    void cancelOnABlockingMethodInterruptsIt() throws Exception {
        Jobs jobs = new Jobs();
        Future<String> call = pool.submit(proxy(jobs)::blocking);
        assertThat(jobs.running.await(5, TimeUnit.SECONDS)).isTrue();
        locks.onKey("lock:blocking").loseLease();
        assertThatThrownBy(() -> call.get(5, TimeUnit.SECONDS)).cause().isInstanceOf(LockLeaseLostException.class)
                .hasCauseInstanceOf(InterruptedException.class);
    }

    @Test
    void cancelDisposesTheMonoSubscriptionAndFailsItsSubscriber() throws Exception {
        Jobs jobs = new Jobs();
        CompletableFuture<String> subscriber = proxy(jobs).mono().toFuture();
        assertThat(jobs.running.await(5, TimeUnit.SECONDS)).isTrue();

        locks.onKey("lock:mono").loseLease();

        assertThatThrownBy(() -> subscriber.get(5, TimeUnit.SECONDS)).cause()
                .isInstanceOf(LockLeaseLostException.class).hasMessageStartingWith("Lock 'lock:mono' was lost");
        assertThat(jobs.cancelled).hasValue(1);
        LockAssert.assertNoLocksHeld(locks);
    }

    @Test
    void cancelDisposesTheFluxSubscriptionAndFailsItsSubscriber() throws Exception {
        Jobs jobs = new Jobs();
        List<String> received = new java.util.concurrent.CopyOnWriteArrayList<>();
        CompletableFuture<Throwable> failed = new CompletableFuture<>();
        proxy(jobs).flux().subscribe(received::add, failed::complete);
        await().atMost(Duration.ofSeconds(5)).until(() -> received.contains("first"));

        locks.onKey("lock:flux").loseLease();

        assertThat(failed.get(5, TimeUnit.SECONDS)).isInstanceOf(LockLeaseLostException.class)
                .hasMessageStartingWith("Lock 'lock:flux' was lost");
        assertThat(jobs.cancelled).hasValue(1);
        LockAssert.assertNoLocksHeld(locks);
    }

    @Test
    void aPolicyTheMethodsResultCannotBeStoppedWithFailsTheStartupNamingTheMethod() throws Exception {
        LockOperationSource operations = new LockOperationSource(null, null, Duration.ZERO, null);
        Method future = Jobs.class.getMethod("interruptsAFuture");
        assertThatThrownBy(() -> operations.getOperation(future, Jobs.class)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Jobs.interruptsAFuture")
                .hasMessageContaining("onLeaseLost = INTERRUPT on a method returning CompletableFuture");
        Method stage = Jobs.class.getMethod("cancelsAStage");
        assertThatThrownBy(() -> operations.getOperation(stage, Jobs.class)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Jobs.cancelsAStage")
                .hasMessageContaining("onLeaseLost = CANCEL on a method declared to return CompletionStage");
    }
}
