package io.github.distlock.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import io.github.distlock.LockType;
import io.github.distlock.spi.LockHandle;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.LockRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.discovery.DiscoverySelectors;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The contract suite can fail: run against providers broken on purpose (each a correct in-memory provider with one
 * defect added), the tests meant to catch that defect fail, and the same tests pass on the provider without it. A
 * suite whose tests cannot fail would pass every provider.
 */
class ContractSuiteSelfTest {

    /** One defect each; {@code NONE} is the control. */
    enum Breakage {
        /** Grants every request at once: no exclusion at all. */
        IGNORES_OWNERS,
        /** A release by a holder whose lease ran out frees the key anyway (delete by key, not by owner). */
        RELEASES_BY_KEY,
        /** Fixed leases are kept until released, like watchdog locks. */
        NEVER_EXPIRES,
        /** A cancelled acquisition is not passed on: the lock it still gets is never given back. */
        LEAKS_CANCELLED_WAITERS,
        /** Never reports a lock lost while held. */
        SILENT_LOSS,
        /** Hands every fenced holder the same token. */
        STALE_TOKENS,
        /** Takes READ locks exclusively. */
        EXCLUSIVE_READS,
        /** Declares only REENTRANT, yet takes every type. */
        ACCEPTS_UNDECLARED,
        NONE
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = Breakage.class, mode = EnumSource.Mode.EXCLUDE, names = "NONE")
    void theTestsMeantToCatchADefectFailOnItAndPassWithoutIt(Breakage breakage) {
        List<Catcher> catchers = catchers(breakage);
        Map<String, List<TestExecutionResult>> broken = run(breakage, catchers);
        Map<String, List<TestExecutionResult>> healthy = run(Breakage.NONE, catchers);
        for (Catcher catcher : catchers) {
            assertThat(broken.get(catcher.test())).as("%s on the provider that %s", catcher, breakage).isNotEmpty()
                    .anyMatch(result -> result.getStatus() == TestExecutionResult.Status.FAILED);
            assertThat(healthy.get(catcher.test())).as("%s on the healthy provider", catcher)
                    .anyMatch(result -> result.getStatus() == TestExecutionResult.Status.SUCCESSFUL)
                    .noneMatch(result -> result.getStatus() == TestExecutionResult.Status.FAILED);
        }
    }

    @Test
    void theFuzzerSeesOverlapsAndLostUpdatesOfAProviderThatIgnoresOwners() throws InterruptedException {
        try (BrokenProvider provider = new BrokenProvider(Breakage.IGNORES_OWNERS)) {
            // overlaps need two holders on two cores at once: a run on a machine whose cores are busy elsewhere can
            // serialize them by chance (seen once in 2 CI runs), so the fuzzer gets a few runs to catch the provider
            long overlaps = 0;
            long lostUpdates = 0;
            for (int run = 0; run < 10 && (overlaps == 0 || lostUpdates == 0); run++) {
                LockFuzzer.Result result = LockFuzzer.of(provider).threads(16).iterationsPerThread(100).run();
                overlaps += result.overlaps();
                lostUpdates += result.lostUpdates();
            }
            assertThat(overlaps).as("overlaps seen in up to 10 runs").isPositive();
            assertThat(lostUpdates).as("lost updates seen in up to 10 runs").isPositive();
        }
        try (BrokenProvider provider = new BrokenProvider(Breakage.NONE)) {
            LockFuzzer.Result result = LockFuzzer.of(provider).threads(16).iterationsPerThread(25).run();
            assertThat(result.overlaps()).isZero();
            assertThat(result.lostUpdates()).isZero();
        }
    }

    /**
     * A contract test, or one invocation of a parameterized one.
     *
     * @param test the method's name
     * @param type the invocation's lock type; {@code null} for a plain test
     */
    record Catcher(String test, LockType type) {

        static Catcher of(String test) {
            return new Catcher(test, null);
        }
    }

    /** The contract tests that must fail when a provider has {@code breakage}. */
    private static List<Catcher> catchers(Breakage breakage) {
        return switch (breakage) {
            case IGNORES_OWNERS -> List.of(new Catcher("sixteenThreadsNeverOverlapNorLoseAnUpdate", LockType.REENTRANT),
                    Catcher.of("aSecondOwnerIsRefusedWhileTheFirstHolds"), Catcher.of("aNewOwnerOfAHeldKeyWaitsInsteadOfReentering"));
            case RELEASES_BY_KEY -> List.of(Catcher.of("releasingALockThatRanOutReturnsFalseAndLeavesTheNextHolderAlone"));
            case NEVER_EXPIRES -> List.of(Catcher.of("aFixedLeaseExpiresAfterItsTimeNotBefore"),
                    Catcher.of("anAbandonedFixedLeaseIsFreedAfterItsLeaseNotBefore"));
            case LEAKS_CANCELLED_WAITERS -> List.of(new Catcher("cancelledWaitersLeaveNoLockBehind", LockType.REENTRANT));
            case SILENT_LOSS -> List.of(Catcher.of("aLockTakenAwayBehindItsBackIsReportedLostWhileHeld"));
            case STALE_TOKENS -> List.of(new Catcher("fencingTokensGrowPerKeyAcrossHolders", LockType.REENTRANT));
            case EXCLUSIVE_READS -> List.of(new Catcher("eachDeclaredTypeLocksAsItsNameSays", LockType.READ),
                    Catcher.of("readersShareWritersExcludeAndAWaitingWriterGetsIn"));
            case ACCEPTS_UNDECLARED -> List.of(Catcher.of("undeclaredTypesAreRefusedWithAClearError"));
            case NONE -> List.of();
        };
    }

    /** Runs the given contract tests on a provider with {@code breakage}; results by test method name. */
    private static Map<String, List<TestExecutionResult>> run(Breakage breakage, List<Catcher> catchers) {
        BrokenProviderContract.breakage = breakage;
        LauncherDiscoveryRequestBuilder request = LauncherDiscoveryRequestBuilder.request();
        for (Catcher catcher : catchers) {
            if (catcher.type() == null) {
                request.selectors(DiscoverySelectors.selectMethod(BrokenProviderContract.class, catcher.test()));
                continue;
            }
            // one invocation: its index among the constants the method's @EnumSource names
            int iteration = enumSourceNames(catcher.test()).indexOf(catcher.type().name());
            request.selectors(DiscoverySelectors.selectIteration(DiscoverySelectors.selectMethod(
                    BrokenProviderContract.class, catcher.test(), LockType.class.getName()), iteration));
        }
        LauncherDiscoveryRequest discovery = request.build();
        Map<String, List<TestExecutionResult>> results = new ConcurrentHashMap<>();
        LauncherFactory.create().execute(discovery, new TestExecutionListener() {
            @Override
            public void executionFinished(TestIdentifier test, TestExecutionResult result) {
                if (test.isTest() && test.getSource().orElse(null) instanceof MethodSource method) {
                    results.computeIfAbsent(method.getMethodName(), name -> new ArrayList<>()).add(result);
                }
            }
        });
        return results;
    }

    /** The lock types a parameterized contract test runs with, in order. */
    private static List<String> enumSourceNames(String test) {
        try {
            EnumSource source = LockProviderContractTest.class.getDeclaredMethod(test, LockType.class)
                    .getAnnotation(EnumSource.class);
            return (source.names().length > 0) ? List.of(source.names())
                    : java.util.Arrays.stream(LockType.values()).map(Enum::name).toList();
        }
        catch (NoSuchMethodException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /**
     * The contract on a {@link BrokenProvider}; run only through {@link #run} (a nested class: the build's test run
     * leaves it out).
     */
    static class BrokenProviderContract extends LockProviderContractTest {

        static volatile Breakage breakage = Breakage.NONE;

        @Override
        protected LockProvider createProvider() {
            return new BrokenProvider(breakage);
        }

        private BrokenProvider broken() {
            return (BrokenProvider) provider();
        }

        @Override
        protected Duration watchdogTimeout() {
            return Duration.ofSeconds(1);
        }

        @Override
        protected Duration slack() {
            // the broken providers fail by far more; a shorter slack keeps this self-test quick
            return Duration.ofSeconds(2);
        }

        @Override
        protected void acquireAndAbandon(LockRequest request) {
            LockHandle handle = provider().acquire(request).join();
            assertThat(handle).isNotNull();
            broken().delegate.abandon(((ForwardingHandle) handle).delegate);
        }

        @Override
        protected void expireBehindItsBack(String key) {
            broken().delegate.expire(key);
        }

        @Override
        protected void awaitQueued(LockType type, String key, int count, CompletableFuture<LockHandle> latest) {
            await().atMost(slack()).until(() -> broken().delegate.waiting(key) >= count);
        }
    }

    /** An {@link InMemoryLockProvider} with one {@link Breakage}. */
    static final class BrokenProvider implements LockProvider, AutoCloseable {

        final InMemoryLockProvider delegate = new InMemoryLockProvider(Duration.ofSeconds(1));
        private final Breakage breakage;

        BrokenProvider(Breakage breakage) {
            this.breakage = breakage;
        }

        @Override
        public boolean supports(LockType type, boolean fenced) {
            return (breakage == Breakage.ACCEPTS_UNDECLARED) ? type == LockType.REENTRANT && !fenced
                    : delegate.supports(type, fenced);
        }

        @Override
        public CompletableFuture<LockHandle> acquire(LockRequest request) {
            LockRequest asked = request;
            switch (breakage) {
                case IGNORES_OWNERS:
                    return CompletableFuture.completedFuture(new FreeHandle());
                case NEVER_EXPIRES:
                    asked = new LockRequest(request.key(), request.waitNanos(), 0, request.fenced(), request.type(),
                            request.owner());
                    break;
                case EXCLUSIVE_READS:
                    if (request.type() == LockType.READ) {
                        asked = new LockRequest(request.key(), request.waitNanos(), request.leaseNanos(), false,
                                LockType.REENTRANT, request.owner());
                    }
                    break;
                default:
                    break;
            }
            CompletableFuture<LockHandle> acquisition = delegate.acquire(asked);
            if (breakage == Breakage.LEAKS_CANCELLED_WAITERS) {
                // a new future: cancelling it reaches nobody, and the handle the acquisition still brings is dropped
                return acquisition.thenApply(handle -> (handle != null) ? new ForwardingHandle(handle, this, request.key()) : null);
            }
            CompletableFuture<LockHandle> result = new CompletableFuture<>();
            result.whenComplete((handle, failure) -> {
                if (result.isCancelled()) {
                    acquisition.cancel(false);
                }
            });
            acquisition.whenComplete((handle, failure) -> {
                if (failure != null) {
                    result.completeExceptionally(failure);
                }
                else if (!result.complete((handle != null) ? new ForwardingHandle(handle, this, request.key()) : null) && handle != null) {
                    handle.releaseAsync();
                }
            });
            return result;
        }

        @Override
        public void close() {
            delegate.close();
        }
    }

    /** A handle of a provider that locks nothing. */
    static final class FreeHandle implements LockHandle {

        @Override
        public long fencingToken() {
            return -1;
        }

        @Override
        public CompletableFuture<Boolean> releaseAsync() {
            return CompletableFuture.completedFuture(true);
        }

        @Override
        public boolean stillHeld() {
            return true;
        }
    }

    /** The in-memory handle, with the provider's breakage applied. */
    static final class ForwardingHandle implements LockHandle {

        final LockHandle delegate;
        private final BrokenProvider provider;
        private final String key;

        ForwardingHandle(LockHandle delegate, BrokenProvider provider, String key) {
            this.delegate = delegate;
            this.provider = provider;
            this.key = key;
        }

        @Override
        public long fencingToken() {
            long token = delegate.fencingToken();
            return (provider.breakage == Breakage.STALE_TOKENS && token >= 0) ? 1 : token;
        }

        @Override
        public long newFencingToken() {
            return delegate.newFencingToken();
        }

        @Override
        public CompletableFuture<Boolean> releaseAsync() {
            if (provider.breakage != Breakage.RELEASES_BY_KEY) {
                return delegate.releaseAsync();
            }
            return delegate.releaseAsync().thenApply(released -> {
                if (!released) {
                    // what a "DELETE WHERE key = ?" without the owner does: frees whoever holds the key now
                    provider.delegate.expire(key);
                }
                return true;
            });
        }

        @Override
        public void whenLost(Consumer<String> callback) {
            if (provider.breakage != Breakage.SILENT_LOSS) {
                delegate.whenLost(callback);
            }
        }

        @Override
        public boolean lostWhileHeld() {
            return provider.breakage != Breakage.SILENT_LOSS && delegate.lostWhileHeld();
        }

        @Override
        public boolean stillHeld() {
            return delegate.stillHeld();
        }
    }
}
