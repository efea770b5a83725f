package io.github.distlock.startup;

import java.util.concurrent.TimeUnit;

import io.github.distlock.DistributedLock;
import io.github.distlock.autoconfigure.DistlockBackend;
import io.github.distlock.testsupport.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Startup failures print Spring Boot's "APPLICATION FAILED TO START" report, with a Description naming the method or
 * property and an Action, as a real application started with {@link SpringApplication} shows them.
 */
@ExtendWith(OutputCaptureExtension.class)
class StartupReportTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static void start(Class<?> config, String... properties) {
        SpringApplication application = new SpringApplication(config);
        application.setWebApplicationType(WebApplicationType.NONE);
        java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of("--spring.main.banner-mode=off"));
        if (java.util.Arrays.stream(properties).noneMatch(p -> p.startsWith("spring.data.redis.port="))) {
            args.add("--spring.data.redis.port=" + redis.port());
        }
        for (String property : properties) {
            args.add("--" + property);
        }
        assertThatThrownBy(() -> application.run(args.toArray(String[]::new)).close()).isNotNull();
    }

    private static void assertReport(CapturedOutput output, String description, String action) {
        String text = output.getAll();
        assertThat(text).contains("APPLICATION FAILED TO START");
        String report = text.substring(text.indexOf("APPLICATION FAILED TO START"));
        assertThat(report).contains("Description:").contains(description).contains("Action:").contains(action);
        // the report, not a chain of bean creation errors, is what a person reads
        assertThat(report.substring(0, report.indexOf("Action:"))).doesNotContain("UnsatisfiedDependencyException");
    }

    @Test
    void invalidKeyExpression(CapturedOutput output) {
        start(BadSyntax.class);
        assertReport(output, "Invalid @DistributedLock on " + BadSyntax.Service.class.getName() + ".place()",
                "Fix the key expression at the position named above");
    }

    @Test
    void unknownParameter(CapturedOutput output) {
        start(UnknownParameter.class);
        assertReport(output, "uses [#userld], which the method does not have",
                "Use one of the method's parameter names, or #p0/#a0 by position");
    }

    @Test
    void methodTheProxyCannotIntercept(CapturedOutput output) {
        start(FinalMethod.class);
        assertReport(output, FinalMethod.Service.class.getName() + ".place() in bean",
                "Make the method public (or protected), non-final and non-static");
    }

    @Test
    void mismatchedFallback(CapturedOutput output) {
        start(BadFallback.class);
        assertReport(output, "fallbackMethod 'cached' not found in " + BadFallback.Service.class.getName(),
                "Add the fallback method to the bean with the same parameters");
    }

    @Test
    void noBackend(CapturedOutput output) {
        start(Valid.class, "spring.autoconfigure.exclude="
                + "io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration");
        assertReport(output, "cannot take a lock: no lock backend is configured",
                "Setting distlock.enabled=false instead runs every @DistributedLock method WITHOUT a lock");
    }

    @Test
    void chosenBackendNotConfigured(CapturedOutput output) {
        start(Valid.class, "distlock.backend=zookeeper");
        assertReport(output, "cannot take a lock: distlock.backend=zookeeper chooses a backend that is not configured",
                "zookeeper needs distlock-zookeeper and distlock.zookeeper.connect-string or a CuratorFramework bean");
    }

    @Test
    void twoBackendsWithoutAChoice(CapturedOutput output) {
        start(TwoBackends.class);
        assertReport(output, "distlock found 2 lock backends configured: jdbc (DataSource bean 'test'); redis "
                + "(spring.data.redis.*", "Choose one with the property distlock.backend (jdbc, redis), the same on "
                + "every instance.");
    }

    @Test
    void unknownBackend(CapturedOutput output) {
        start(Valid.class, "distlock.backend=postgres");
        assertReport(output, "distlock.backend=postgres names no backend distlock has",
                "Set distlock.backend to one of redis, jdbc, zookeeper, etcd");
    }

    @Test
    void invalidProperty(CapturedOutput output) {
        start(Valid.class, "distlock.wait-time=500us");
        assertReport(output, "distlock.wait-time", "Update your application's configuration");
    }

    @Test
    void redisRequiredButUnreachable(CapturedOutput output) {
        start(Valid.class, "distlock.redis.require-at-startup=true", "spring.data.redis.port=1",
                "spring.data.redis.connect-timeout=200ms");
        assertReport(output, "distlock could not reach Redis at startup",
                "set distlock.redis.require-at-startup=false to start anyway");
    }

    /** A second backend next to Redis, as the database module would offer it. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class TwoBackends extends Valid {
        @Bean
        DistlockBackend jdbcBackend() {
            return new DistlockBackend("jdbc", "DataSource bean 'test'", () -> request -> {
                throw new AssertionError("a backend that was not chosen must never be asked for a lock");
            });
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class BadSyntax {
        @Bean
        Service service() {
            return new Service();
        }

        static class Service {
            @DistributedLock(key = "'order:' + #userId +")
            public void place(String userId) {
            }
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class UnknownParameter {
        @Bean
        Service service() {
            return new Service();
        }

        static class Service {
            @DistributedLock(key = "'order:' + #userld")
            public void place(String userId) {
            }
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class FinalMethod {
        @Bean
        Service service() {
            return new Service();
        }

        static class Service {
            @DistributedLock(key = "'order:' + #userId")
            public final void place(String userId) {
            }
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Valid {
        @Bean
        ValidService service() {
            return new ValidService();
        }
    }

    static class ValidService {
        @DistributedLock(key = "'order:' + #userId", waitTime = 1, timeUnit = TimeUnit.SECONDS)
        public void place(String userId) {
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class BadFallback {
        @Bean
        Service service() {
            return new Service();
        }

        static class Service {
            @DistributedLock(key = "'quote:' + #id", fallbackMethod = "cached")
            public String quote(long id) {
                return "fresh";
            }

            public String cached(String id) {
                return "cached";
            }
        }
    }
}
