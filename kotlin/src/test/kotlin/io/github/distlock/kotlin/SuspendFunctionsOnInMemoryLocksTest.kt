package io.github.distlock.kotlin

import io.github.distlock.LockLeaseLostException
import io.github.distlock.test.AutoConfigureInMemoryLocks
import io.github.distlock.test.InMemoryLockProvider
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.async
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.Test
import org.springframework.beans.factory.annotation.Autowired
import org.springframework.boot.autoconfigure.EnableAutoConfiguration
import org.springframework.boot.test.context.SpringBootTest
import org.springframework.context.annotation.Configuration
import org.springframework.context.annotation.Import

/** The coroutine checks on test-kit's in-memory locks, and a lease lost under CANCEL (which only they can lose at will). */
@SpringBootTest(classes = [SuspendFunctionsOnInMemoryLocksTest.App::class])
@AutoConfigureInMemoryLocks
class SuspendFunctionsOnInMemoryLocksTest : CoroutineLockingChecks() {

    @Autowired
    lateinit var provider: InMemoryLockProvider

    @Test
    fun `a suspend function whose lease is lost under CANCEL is cancelled and its caller told why`() = runBlocking<Unit> {
        val entered = CompletableDeferred<Unit>()
        val stopped = CompletableDeferred<Unit>()
        val call = async { runCatching { accounts.workUntilCancelled("lost", entered, stopped) } }
        withTimeout(5_000) { entered.await() }

        provider.onKey(locks.fullKey("acct:lost")).loseLease()

        withTimeout(5_000) { stopped.await() }
        val outcome = withTimeout(5_000) { call.await() }
        assertThat(outcome.exceptionOrNull()).isInstanceOf(LockLeaseLostException::class.java)
        assertThat(provider.isLocked(locks.fullKey("acct:lost"))).isFalse()
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(Accounts::class)
    class App
}
