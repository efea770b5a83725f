package io.github.distlock.etcd.autoconfigure;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;

import io.github.distlock.etcd.EtcdLockProvider;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * {@code distlock.etcd.*}: where the etcd lock backend connects when the application has no jetcd {@code Client} bean
 * of its own, and where its locks live. The lease of watchdog locks is {@code distlock.watchdog-timeout}, rounded up
 * to whole seconds (etcd counts leases in seconds).
 */
@ConfigurationProperties(prefix = "distlock.etcd")
public class DistlockEtcdProperties {

    /** Default namespace. */
    public static final String DEFAULT_NAMESPACE = "distlock/";

    /**
     * The cluster's client URLs, e.g. {@code http://etcd-1:2379,http://etcd-2:2379} ({@code https://} with TLS,
     * configured through an {@code EtcdClientBuilderCustomizer} bean). Setting them configures the etcd backend;
     * ignored (with a warning) when the application has a jetcd Client bean, which is used instead.
     */
    private List<String> endpoints = new ArrayList<>();

    /** User name, when etcd's authentication is on. */
    private @Nullable String user;

    /** Password of {@link #user}. */
    private @Nullable String password;

    /** Prefix of every lock key in etcd. */
    private String namespace = DEFAULT_NAMESPACE;

    public List<String> getEndpoints() {
        return endpoints;
    }

    public void setEndpoints(List<String> endpoints) {
        List<String> checked = new ArrayList<>();
        for (int i = 0; i < endpoints.size(); i++) {
            checked.add(checkEndpoint(i, endpoints.get(i)));
        }
        this.endpoints = checked;
    }

    private static String checkEndpoint(int index, String endpoint) {
        String property = "distlock.etcd.endpoints[" + index + "]";
        URI uri;
        try {
            uri = URI.create(endpoint.trim());
        }
        catch (IllegalArgumentException | NullPointerException ex) {
            throw new IllegalArgumentException(property + " must be a URL such as http://etcd-1:2379, was '" + endpoint + "'");
        }
        if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null || uri.getPort() < 0) {
            throw new IllegalArgumentException(property + " must be a URL such as http://etcd-1:2379 (scheme http or "
                    + "https, a host and a port), was '" + endpoint + "'");
        }
        return endpoint.trim();
    }

    public @Nullable String getUser() {
        return user;
    }

    public void setUser(@Nullable String user) {
        this.user = user;
    }

    public @Nullable String getPassword() {
        return password;
    }

    public void setPassword(@Nullable String password) {
        this.password = password;
    }

    public String getNamespace() {
        return namespace;
    }

    public void setNamespace(String namespace) {
        EtcdLockProvider.checkNamespace(namespace);
        this.namespace = namespace;
    }
}
