package io.github.distlock.kotlin

import io.github.distlock.LockAcquisitionException
import io.github.distlock.LockOptions
import io.github.distlock.LockTemplate
import java.time.Duration
import java.util.concurrent.CompletableFuture
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.assertj.core.api.Assertions.assertThat
import org.assertj.core.api.Assertions.assertThatThrownBy
import org.awaitility.Awaitility.await
import org.junit.jupiter.api.Test
import org.springframework.beans.factory.annotation.Autowired

/**
 * What the Java call shapes are checked for, on suspend functions and Flow results: one lock per call from entry until
 * the coroutine (or the flow) has completed. Run on each backend by a subclass.
 */
abstract class CoroutineLockingChecks {

    @Autowired
    lateinit var accounts: Accounts

    @Autowired
    lateinit var locks: LockTemplate

    /** Whether another owner (a thread of its own) can take the key now: it takes and gives it back at once. */
    private fun freeElsewhere(key: String): Boolean = CompletableFuture.supplyAsync {
        locks.tryExecute<Unit, RuntimeException>(key, LockOptions.waitFor(Duration.ZERO)) { }.acquired()
    }.join()

    /** Holds [key] on a thread of its own until the returned future is completed. */
    private fun holdElsewhere(key: String): CompletableFuture<Unit> {
        val release = CompletableFuture<Unit>()
        val held = CompletableFuture<Unit>()
        Thread {
            locks.execute<Unit, RuntimeException>(key, LockOptions.waitFor(Duration.ofSeconds(5))) {
                held.complete(Unit)
                release.join()
            }
        }.start()
        held.join()
        return release
    }

    @Test
    fun concurrentCoroutinesOnOneKeyNeverOverlapAndLoseNoUpdate(): Unit = runBlocking {
        val calls = 40
        coroutineScope {
            (1..calls).map { async(Dispatchers.Default) { accounts.deposit("a1", 1) } }.awaitAll()
        }
        assertThat(accounts.balances["a1"]).isEqualTo(calls)
        assertThat(accounts.mostInside.get()).isEqualTo(1)
    }

    @Test
    fun theLockIsHeldWhileTheCoroutineIsSuspendedAndFreedWhenItCompletes(): Unit = runBlocking {
        val entered = CompletableDeferred<Unit>()
        val done = CompletableDeferred<Unit>()
        val call = async(Dispatchers.Default) { accounts.holdUntil("h1", entered, done) }
        withTimeout(5_000) { entered.await() }

        assertThat(freeElsewhere("acct:h1")).`as`("held across the suspension").isFalse()
        assertThat(freeElsewhere("acct:h2")).`as`("the key is the parameter's").isTrue()
        done.complete(Unit)
        assertThat(call.await()).isEqualTo("held h1")
        assertThat(freeElsewhere("acct:h1")).`as`("released on completion").isTrue()
    }

    @Test
    fun anExceptionAfterASuspensionReachesTheCallerAndReleases(): Unit = runBlocking {
        val entered = CompletableDeferred<Unit>()
        val fail = CompletableDeferred<Unit>()
        val call = async(Dispatchers.Default) { runCatching { accounts.failAfterSuspending("e1", entered, fail) } }
        withTimeout(5_000) { entered.await() }
        assertThat(freeElsewhere("acct:e1")).isFalse()

        fail.complete(Unit)
        assertThat(call.await().exceptionOrNull()).isInstanceOf(IllegalStateException::class.java)
            .hasMessage("declined e1")
        assertThat(freeElsewhere("acct:e1")).isTrue()
    }

    @Test
    fun aCancelledCallKeepsItsLockUntilItsCleanUpHasStopped(): Unit = runBlocking {
        val entered = CompletableDeferred<Unit>()
        val cleaning = CompletableDeferred<Unit>()
        val cleaned = CompletableDeferred<Unit>()
        val call = launch(Dispatchers.Default) { accounts.cleanUpAfterCancellation("c1", entered, cleaning, cleaned) }
        withTimeout(5_000) { entered.await() }

        call.cancel()
        withTimeout(5_000) { cleaning.await() }
        assertThat(freeElsewhere("acct:c1")).`as`("held while the cancelled body still works").isFalse()

        cleaned.complete(Unit)
        call.cancelAndJoin()
        await().atMost(Duration.ofSeconds(5)).until { freeElsewhere("acct:c1") }
    }

    @Test
    fun aTakenLockSkipsOrFallsBackAsAnnotatedAndAFreeOneRuns(): Unit = runBlocking {
        val release = holdElsewhere("acct:s1")
        try {
            assertThat(accounts.skipIfBusy("s1")).isNull()
            assertThat(accounts.quote("s1")).isEqualTo("busy s1")
            assertThat(accounts.quoteWithReason("s1")).startsWith("busy s1: Could not acquire lock '")
                .contains("acct:s1")
            assertThatThrownBy { runBlocking { accounts.tryOnce("s1") } }
                .isInstanceOf(LockAcquisitionException::class.java).hasMessageContaining("acct:s1")
            assertThat(accounts.runs.get()).`as`("no body ran").isZero()
        } finally {
            release.complete(Unit)
        }
        await().atMost(Duration.ofSeconds(5)).until { freeElsewhere("acct:s1") }
        assertThat(accounts.skipIfBusy("s1")).isEqualTo("ran s1")
        assertThat(accounts.quote("s1")).isEqualTo("quote s1")
    }

    @Test
    fun aWaitingCallRunsOnceTheHolderReleases(): Unit = runBlocking {
        val release = holdElsewhere("acct:w1")
        val call = async(Dispatchers.Default) { accounts.waitForIt("w1") }
        release.complete(Unit)
        assertThat(withTimeout(5_000) { call.await() }).isEqualTo("waited w1")
    }

    @Test
    fun aFlowHoldsItsLockFromCollectionUntilItEnds(): Unit = runBlocking {
        for (later in listOf(false, true)) {
            val gate = CompletableDeferred<Unit>()
            val first = CompletableDeferred<Unit>()
            val flow = if (later) accounts.statementLater("f1", gate) else accounts.statement("f1", gate)
            assertThat(freeElsewhere("acct:f1")).`as`("nothing held before collection").isTrue()
            val collected = async(Dispatchers.Default) {
                val items = mutableListOf<String>()
                flow.collect { items += it; first.complete(Unit) }
                items
            }
            withTimeout(5_000) { first.await() }
            assertThat(freeElsewhere("acct:f1")).`as`("held while collected").isFalse()

            gate.complete(Unit)
            assertThat(withTimeout(5_000) { collected.await() }).containsExactly("f1 opened", "f1 closed")
            await().atMost(Duration.ofSeconds(5)).until { freeElsewhere("acct:f1") }
        }
    }

    @Test
    fun aFlowCollectedTwiceTakesTheLockEachTime(): Unit = runBlocking {
        val gate = CompletableDeferred(Unit)
        val flow = accounts.statement("f2", gate)
        assertThat(flow.toList()).hasSize(2)
        assertThat(flow.toList()).hasSize(2)
        assertThat(freeElsewhere("acct:f2")).isTrue()
    }
}
