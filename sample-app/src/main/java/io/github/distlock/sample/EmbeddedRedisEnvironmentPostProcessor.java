package io.github.distlock.sample;

import java.util.List;
import java.util.Map;

import io.github.distlock.testsupport.RedisServer;
import org.apache.commons.logging.Log;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.logging.DeferredLogFactory;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Starts a {@code redis-server} on a free loopback port when the application configures no Redis, so the sample runs
 * on a machine with nothing installed. Any of {@code spring.data.redis.host}, {@code port}, {@code url},
 * {@code sentinel.nodes}, {@code cluster.nodes} or {@code masterreplica.nodes} means "use that Redis instead";
 * {@code sample.embedded-redis.enabled=false}, or a {@code distlock.backend} other than {@code redis}, turns this off.
 *
 * <p>The server becomes a bean with {@code close} as its destroy method: it is created before the application's own
 * beans and so destroyed after them, after the Redisson client has shut down.
 */
public class EmbeddedRedisEnvironmentPostProcessor implements EnvironmentPostProcessor, Ordered {

    private static final List<String> REDIS_SETTINGS = List.of("spring.data.redis.host", "spring.data.redis.port",
            "spring.data.redis.url", "spring.data.redis.sentinel.nodes", "spring.data.redis.cluster.nodes",
            "spring.data.redis.masterreplica.nodes");

    private final Log log;

    /** Called by Spring Boot with its log factory (logging is not set up yet when this runs). */
    public EmbeddedRedisEnvironmentPostProcessor(DeferredLogFactory logFactory) {
        this.log = logFactory.getLog(EmbeddedRedisEnvironmentPostProcessor.class);
    }

    /** After the config data processor, so application.properties, profiles and the command line are visible. */
    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE;
    }

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        String backend = environment.getProperty("distlock.backend", "redis");
        if (!environment.getProperty("sample.embedded-redis.enabled", Boolean.class, true)
                || !backend.strip().equalsIgnoreCase("redis")
                || REDIS_SETTINGS.stream().anyMatch(environment::containsProperty)) {
            return;
        }
        RedisServer server = RedisServer.start();
        environment.getPropertySources().addFirst(new MapPropertySource("embeddedRedis", Map.of(
                "spring.data.redis.host", server.host(),
                "spring.data.redis.port", server.port())));
        log.info("No Redis configured: started embedded redis-server on " + server.host() + ":" + server.port()
                + " (pid " + server.pid() + "); set spring.data.redis.host/port to use a real Redis");
        // other context types still lose the server at JVM exit, through RedisServer's own shutdown hook
        application.addInitializers(context -> {
            if (context instanceof GenericApplicationContext generic) {
                generic.registerBean("embeddedRedisServer", RedisServer.class, () -> server,
                        definition -> definition.setDestroyMethodName("close"));
            }
        });
    }
}
