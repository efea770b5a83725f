package io.github.distlock.autoconfigure;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

import io.github.distlock.spi.LockProvider;
import org.jspecify.annotations.Nullable;

/**
 * A lock backend that an auto-configuration found usable: its client library is present and its client is
 * configured. distlock turns the one chosen with {@code distlock.backend}, or the only one there is, into the
 * application's {@link LockProvider}; two or more without a choice fail the startup, naming each.
 *
 * <p>Register one as a bean guarded by {@link ConditionalOnDistlockBackend}, in an auto-configuration ordered before
 * {@link DistlockAutoConfiguration}. An application's own {@link LockProvider} bean takes precedence over all of them.
 *
 * @param name the value of {@code distlock.backend} that chooses this backend, in lower case: {@code redis},
 * {@code jdbc}, {@code zookeeper}, {@code etcd}, or a third party's own name
 * @param description what configured it, for the startup report: {@code "DataSource bean 'dataSource'"}
 * @param provider creates the provider; called once, and only for the backend in use, so that a backend that is
 * present but not chosen starts nothing
 */
public record DistlockBackend(String name, String description, Supplier<? extends LockProvider> provider) {

    /**
     * distlock's own backends, by name, with what each needs: named in startup reports when the chosen backend is
     * missing. Not a limit: a third party's backend registers a {@code DistlockBackend} of its own name.
     */
    public static final Map<String, String> FIRST_PARTY = firstParty();

    private static Map<String, String> firstParty() {
        Map<String, String> backends = new LinkedHashMap<>();
        backends.put("redis", "distlock-redis, org.redisson:redisson and spring-boot-data-redis (the distlock starter "
                + "brings all three) with spring.data.redis.* or a RedissonClient bean");
        backends.put("jdbc", "distlock-jdbc and a DataSource bean");
        backends.put("zookeeper", "distlock-zookeeper and distlock.zookeeper.connect-string or a CuratorFramework bean");
        backends.put("etcd", "distlock-etcd and distlock.etcd.endpoints or a jetcd Client bean");
        return Collections.unmodifiableMap(backends);
    }

    /** Checks that every part is there. */
    public DistlockBackend {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(description, "description");
        Objects.requireNonNull(provider, "provider");
    }

    /**
     * Whether {@code chosen}, a value of {@code distlock.backend}, names this backend. Compared as Spring Boot binds an
     * enum's name: case, dashes and underscores do not count ({@code Redis}, {@code zoo-keeper} match).
     * @param chosen the value as written, or {@code null}
     * @return {@code false} for {@code null}
     */
    public boolean isNamed(@Nullable String chosen) {
        return chosen != null && sameName(name, chosen);
    }

    /**
     * Whether two backend names are the same as {@code distlock.backend} compares them (see {@link #isNamed}).
     * @param one a name
     * @param other another name
     * @return whether they name the same backend
     */
    public static boolean sameName(String one, String other) {
        return canonical(one).equals(canonical(other));
    }

    static String canonical(String name) {
        StringBuilder canonical = new StringBuilder(name.length());
        name.chars().filter(Character::isLetterOrDigit).map(Character::toLowerCase).forEach(canonical::appendCodePoint);
        return canonical.toString();
    }

    @Override
    public String toString() {
        return name + " (" + description + ")";
    }
}
