package io.github.distlock.autoconfigure;

import java.util.HashSet;
import java.util.Set;

import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Sanitising of the actuator endpoint {@code distlock}, as Actuator's own {@code env} and {@code configprops}
 * endpoints do it.
 */
@ConfigurationProperties("management.endpoint.distlock")
public class DistlockEndpointProperties {

    /**
     * When lock keys are shown (they may carry personal data such as a user id): never (the default: every key reads
     * ******), when-authorized (to users with one of the roles), or always.
     */
    private Show showValues = Show.NEVER;

    /** Roles that may see keys when show-values is when-authorized; empty: any authenticated user. */
    private final Set<String> roles = new HashSet<>();

    public Show getShowValues() {
        return showValues;
    }

    public void setShowValues(Show showValues) {
        this.showValues = showValues;
    }

    public Set<String> getRoles() {
        return roles;
    }
}
