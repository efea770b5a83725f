package io.github.distlock.kotlin

import io.github.distlock.test.AutoConfigureInMemoryLocks
import org.springframework.boot.autoconfigure.EnableAutoConfiguration
import org.springframework.boot.test.context.SpringBootTest
import org.springframework.context.annotation.Configuration
import org.springframework.context.annotation.Import

/** The coroutine checks on test-kit's in-memory locks. */
@SpringBootTest(classes = [SuspendFunctionsOnInMemoryLocksTest.App::class])
@AutoConfigureInMemoryLocks
class SuspendFunctionsOnInMemoryLocksTest : CoroutineLockingChecks() {

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(Accounts::class)
    class App
}
