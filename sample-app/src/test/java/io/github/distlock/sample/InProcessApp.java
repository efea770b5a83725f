package io.github.distlock.sample;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * The sample started in this JVM on a random port with a database of its own; closing it stops it (and the embedded
 * redis-server, when it started one).
 */
final class InProcessApp implements AutoCloseable {

    private final ConfigurableApplicationContext context;

    private InProcessApp(ConfigurableApplicationContext context) {
        this.context = context;
    }

    /** Starts the sample with these extra {@code --name=value} arguments. */
    static InProcessApp start(String... args) {
        List<String> all = new ArrayList<>(List.of("--server.port=0",
                "--spring.datasource.url=jdbc:h2:mem:" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1"));
        all.addAll(List.of(args));
        return new InProcessApp(SpringApplication.run(SampleApplication.class, all.toArray(String[]::new)));
    }

    String baseUrl() {
        return "http://127.0.0.1:" + context.getEnvironment().getProperty("local.server.port");
    }

    ConfigurableApplicationContext context() {
        return context;
    }

    JdbcClient jdbc() {
        return context.getBean(JdbcClient.class);
    }

    @Override
    public void close() {
        context.close();
    }
}
