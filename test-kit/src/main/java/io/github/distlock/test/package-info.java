/**
 * For tests: the contract suites every lock provider must pass
 * ({@link io.github.distlock.test.LockProviderContractTest}, {@link io.github.distlock.test.LockTemplateContractTest},
 * {@link io.github.distlock.test.LockFuzzer}), an in-memory provider for an application's tests without a lock server
 * ({@link io.github.distlock.test.AutoConfigureInMemoryLocks}) that injects a backend's faults when told to
 * ({@link io.github.distlock.test.LockFaults}), and assertions about what ran under which lock
 * ({@link io.github.distlock.test.LockAssert}, {@link io.github.distlock.test.LockRecorder}).
 */
@NullMarked
package io.github.distlock.test;

import org.jspecify.annotations.NullMarked;
