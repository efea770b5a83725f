package io.github.distlock.actuate;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.github.distlock.it.RecordingLockListener;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/** An application with Actuator over HTTP on a free port, on the given properties; closed by the test. */
final class WebApp implements AutoCloseable {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    final ConfigurableApplicationContext context;
    private final int port;

    private WebApp(ConfigurableApplicationContext context) {
        this.context = context;
        this.port = ((WebServerApplicationContext) context).getWebServer().getPort();
    }

    static WebApp start(String... properties) {
        List<String> all = new ArrayList<>(List.of("server.port=0", "spring.main.banner-mode=off",
                "logging.level.root=WARN", "management.endpoints.web.exposure.include=distlock,health"));
        all.addAll(List.of(properties));
        return new WebApp(new SpringApplicationBuilder(App.class).properties(all.toArray(String[]::new)).run());
    }

    <T> T bean(Class<T> type) {
        return context.getBean(type);
    }

    Response get(String path) {
        return send(HttpRequest.newBuilder(uri(path)).GET());
    }

    Response delete(String path) {
        return send(HttpRequest.newBuilder(uri(path)).DELETE());
    }

    private URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port + path);
    }

    private static Response send(HttpRequest.Builder request) {
        try {
            HttpResponse<String> response = HTTP.send(request.timeout(Duration.ofSeconds(30)).build(),
                    HttpResponse.BodyHandlers.ofString());
            return new Response(response.statusCode(), response.body());
        }
        catch (IOException ex) {
            throw new IllegalStateException(ex);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }

    @Override
    public void close() {
        context.close();
    }

    /** An HTTP answer. */
    record Response(int status, String body) {
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {

        @Bean
        RecordingLockListener recordingLockListener() {
            return new RecordingLockListener();
        }
    }
}
