package io.github.distlock.sample;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** A small HTTP client for the shop's API, with a timeout on every request. */
final class ShopClient {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);

    /** A response: its status, raw body, parsed JSON body and headers, and when it was received (before parsing). */
    record Response(int status, String body, JsonNode json, HttpHeaders headers, Instant receivedAt) {

        /** The {@code Location} header, or "" when none. */
        String location() {
            return headers.firstValue("Location").orElse("");
        }

        /** The problem detail's type suffix ({@code urn:distlock-sample:problem:<type>}), or "" when none. */
        String problemType() {
            String type = json.path("type").asString("");
            return type.substring(type.lastIndexOf(':') + 1);
        }
    }

    private final HttpClient http;

    ShopClient() {
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    Response placeOrder(String baseUrl, String path, long userId, long productId, int quantity) {
        return post(baseUrl + path, "{\"userId\":%d,\"productId\":%d,\"quantity\":%d}".formatted(userId, productId, quantity));
    }

    Response createProduct(String baseUrl, String name, int stock) {
        return post(baseUrl + "/api/products", "{\"name\":\"%s\",\"stock\":%d}".formatted(name, stock));
    }

    /** POSTs {@code json}, with these extra headers (name, value, name, value...). */
    Response post(String url, String json, String... headers) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url)).timeout(REQUEST_TIMEOUT)
                .header("Content-Type", "application/json");
        for (int i = 0; i + 1 < headers.length; i += 2) {
            request.header(headers[i], headers[i + 1]);
        }
        return send(request.POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }

    Response get(String url) {
        return send(HttpRequest.newBuilder(URI.create(url)).timeout(REQUEST_TIMEOUT).GET().build());
    }

    private Response send(HttpRequest request) {
        try {
            HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            Instant receivedAt = Instant.now();
            String body = response.body();
            JsonNode json = body.isBlank() ? JSON.missingNode() : JSON.readTree(body);
            return new Response(response.statusCode(), body, json, response.headers(), receivedAt);
        }
        catch (IOException ex) {
            throw new UncheckedIOException(request.method() + " " + request.uri() + " failed", ex);
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted", ex);
        }
    }
}
