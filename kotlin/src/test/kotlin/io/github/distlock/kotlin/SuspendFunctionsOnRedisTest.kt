package io.github.distlock.kotlin

import io.github.distlock.testsupport.RedisServerExtension
import org.junit.jupiter.api.extension.RegisterExtension
import org.springframework.boot.autoconfigure.EnableAutoConfiguration
import org.springframework.boot.test.context.SpringBootTest
import org.springframework.context.annotation.Configuration
import org.springframework.context.annotation.Import
import org.springframework.test.context.DynamicPropertyRegistry
import org.springframework.test.context.DynamicPropertySource

/** The coroutine checks on Redis (Redisson), on a redis-server of the test's own. */
@SpringBootTest(classes = [SuspendFunctionsOnRedisTest.App::class])
class SuspendFunctionsOnRedisTest : CoroutineLockingChecks() {

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(Accounts::class)
    class App

    companion object {
        @JvmField
        @RegisterExtension
        val redis = RedisServerExtension()

        @JvmStatic
        @DynamicPropertySource
        fun redisProperties(registry: DynamicPropertyRegistry) {
            registry.add("spring.data.redis.host") { redis.server().host() }
            registry.add("spring.data.redis.port") { redis.port() }
        }
    }
}
