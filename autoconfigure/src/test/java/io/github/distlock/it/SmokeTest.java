package io.github.distlock.it;

import io.github.distlock.DistributedLock;
import io.github.distlock.LockTemplate;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;

@SpringBootTest(classes = {LockTestApplication.class, SmokeTest.Config.class})
class SmokeTest extends RedisIntegrationTest {

    @Autowired
    Service service;

    @Autowired
    LockTemplate lockTemplate;

    @Test
    void annotatedMethodRunsUnderItsLock() {
        assertThat(service.keysWhileRunning("42")).containsExactly("lock:smoke:42");
        assertThat(redisCommands.keys("*")).isEmpty();
        assertThat(lockTemplate.execute("x", () -> redisCommands.exists("lock:x"))).isEqualTo(1L);
    }

    static class Service {
        @DistributedLock(key = "'smoke:' + #id")
        public java.util.List<String> keysWhileRunning(String id) {
            return redisCommands.keys("lock:*");
        }
    }

    @TestConfiguration
    static class Config {
        @Bean
        Service service() {
            return new Service();
        }
    }
}
