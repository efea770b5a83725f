package io.github.distlock.actuate;

import java.security.Principal;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

import io.github.distlock.DefaultLockTemplate;
import io.github.distlock.autoconfigure.DistlockProperties;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockProvider;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.Show;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Actuator's show-values convention for lock keys, for each setting and caller. The Redis-backed HTTP test
 * ({@link DistlockEndpointTest}) covers the default and {@code always}; here {@code when-authorized}.
 */
class DistlockEndpointSanitizingTest {

    /** Nothing is locked here: only the key echoed by a lookup is looked at. */
    private static final LockProvider PLAIN = request -> CompletableFuture.completedFuture(null);

    private static final SecurityContext OPERATOR = context("alice", "OPS");
    private static final SecurityContext OTHER_USER = context("bob", "USER");

    @Test
    void whenAuthorizedShowsKeysToUsersInTheRolesOnly() {
        DistlockEndpoint endpoint = endpoint(Show.WHEN_AUTHORIZED, Set.of("OPS"));
        assertThat(key(endpoint, OPERATOR)).isEqualTo("lock:order:7");
        assertThat(key(endpoint, OTHER_USER)).isEqualTo("******");
        assertThat(key(endpoint, SecurityContext.NONE)).isEqualTo("******");
    }

    @Test
    void whenAuthorizedWithoutRolesShowsKeysToAnyAuthenticatedUser() {
        DistlockEndpoint endpoint = endpoint(Show.WHEN_AUTHORIZED, Set.of());
        assertThat(key(endpoint, OTHER_USER)).isEqualTo("lock:order:7");
        assertThat(key(endpoint, SecurityContext.NONE)).isEqualTo("******");
    }

    @Test
    void neverAndAlwaysIgnoreTheCaller() {
        assertThat(key(endpoint(Show.NEVER, Set.of("OPS")), OPERATOR)).isEqualTo("******");
        assertThat(key(endpoint(Show.ALWAYS, Set.of()), SecurityContext.NONE)).isEqualTo("lock:order:7");
    }

    private static String key(DistlockEndpoint endpoint, SecurityContext caller) {
        return endpoint.lock(caller, new String[] {"order:7"}).key();
    }

    private static DistlockEndpoint endpoint(Show show, Set<String> roles) {
        DistlockProperties properties = new DistlockProperties();
        DefaultLockTemplate template = new DefaultLockTemplate(PLAIN, properties.getKeyPrefix(), Duration.ZERO, null,
                List.of());
        return new DistlockEndpoint(template, PLAIN, new LockInstance("app", "host", 1), properties, "test", show,
                roles);
    }

    private static SecurityContext context(String name, String role) {
        Principal principal = () -> name;
        return new SecurityContext() {
            @Override
            public Principal getPrincipal() {
                return principal;
            }

            @Override
            public boolean isUserInRole(String candidate) {
                return role.equals(candidate);
            }
        };
    }
}
