package io.github.distlock.kotlin

import io.github.distlock.DistributedLock
import io.github.distlock.LeaseLostPolicy
import io.github.distlock.LockAcquisitionException
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.withContext
import org.springframework.stereotype.Component

/** Suspend functions and Flow results under @DistributedLock, each a shape the tests call. */
@Component
class Accounts {

    val balances = ConcurrentHashMap<String, Int>()
    val inside = AtomicInteger()
    val mostInside = AtomicInteger()
    val runs = AtomicInteger()

    /** Reads, suspends, writes: a lock released at the first suspension lets another caller in between. */
    @DistributedLock(key = "'acct:' + #id", waitTime = 10, timeUnit = TimeUnit.SECONDS)
    suspend fun deposit(id: String, amount: Int): Int {
        mostInside.accumulateAndGet(inside.incrementAndGet(), ::maxOf)
        try {
            val before = balances[id] ?: 0
            delay(2)
            balances[id] = before + amount
            return before + amount
        } finally {
            inside.decrementAndGet()
        }
    }

    @DistributedLock(key = "'acct:' + #id")
    suspend fun holdUntil(id: String, entered: CompletableDeferred<Unit>, done: CompletableDeferred<Unit>): String {
        entered.complete(Unit)
        done.await()
        return "held $id"
    }

    @DistributedLock(key = "'acct:' + #id")
    suspend fun failAfterSuspending(id: String, entered: CompletableDeferred<Unit>, fail: CompletableDeferred<Unit>) {
        entered.complete(Unit)
        fail.await()
        throw IllegalStateException("declined $id")
    }

    /** Waits until it is cancelled: by its lock's loss, with CANCEL. */
    @DistributedLock(key = "'acct:' + #id", onLeaseLost = LeaseLostPolicy.CANCEL)
    suspend fun workUntilCancelled(id: String, entered: CompletableDeferred<Unit>, stopped: CompletableDeferred<Unit>):
            String {
        try {
            entered.complete(Unit)
            awaitCancellation()
        } finally {
            stopped.complete(Unit)
        }
    }

    /** Cancelled while it waits; its clean-up then goes on, and must still run under the lock. */
    @DistributedLock(key = "'acct:' + #id")
    suspend fun cleanUpAfterCancellation(id: String, entered: CompletableDeferred<Unit>,
            cleaning: CompletableDeferred<Unit>, cleaned: CompletableDeferred<Unit>) {
        try {
            entered.complete(Unit)
            awaitCancellation()
        } finally {
            withContext(NonCancellable) {
                cleaning.complete(Unit)
                cleaned.await()
            }
        }
    }

    @DistributedLock(key = "'acct:' + #id", skipIfLocked = true)
    suspend fun skipIfBusy(id: String): String? {
        runs.incrementAndGet()
        delay(1)
        return "ran $id"
    }

    @DistributedLock(key = "'acct:' + #id", fallbackMethod = "busy")
    suspend fun quote(id: String): String {
        runs.incrementAndGet()
        delay(1)
        return "quote $id"
    }

    suspend fun busy(id: String): String {
        delay(1)
        return "busy $id"
    }

    @DistributedLock(key = "'acct:' + #id", fallbackMethod = "busyBecause")
    suspend fun quoteWithReason(id: String): String {
        runs.incrementAndGet()
        return "quote $id"
    }

    suspend fun busyBecause(id: String, reason: LockAcquisitionException): String = "busy $id: ${reason.message}"

    @DistributedLock(key = "'acct:' + #id", waitTime = 0)
    suspend fun tryOnce(id: String): String {
        runs.incrementAndGet()
        return "ran $id"
    }

    @DistributedLock(key = "'acct:' + #id", waitTime = 10, timeUnit = TimeUnit.SECONDS)
    suspend fun waitForIt(id: String): String = "waited $id"

    /** Held from collection until the flow ends: the second element is emitted after [gate] opens. */
    @DistributedLock(key = "'acct:' + #id")
    fun statement(id: String, gate: CompletableDeferred<Unit>): Flow<String> = flow {
        emit("$id opened")
        gate.await()
        emit("$id closed")
    }

    @DistributedLock(key = "'acct:' + #id")
    suspend fun statementLater(id: String, gate: CompletableDeferred<Unit>): Flow<String> {
        delay(1)
        return flow {
            emit("$id opened")
            gate.await()
            emit("$id closed")
        }
    }
}
