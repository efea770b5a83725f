package io.github.distlock.actuate;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension;

/**
 * The HTTP face of {@link DistlockEndpoint}'s force release: {@code 403 Forbidden} while
 * {@code distlock.actuator.force-release-enabled} is off, so that a script's {@code curl --fail} fails; {@code 409
 * Conflict} with the holders now when {@code ?owner=} was given and that owner does not hold the key; otherwise
 * {@code 200} with the holders evicted (none when nobody held the key).
 */
@EndpointWebExtension(endpoint = DistlockEndpoint.class)
public class DistlockEndpointWebExtension {

    private static final int STATUS_FORBIDDEN = 403;

    private static final int STATUS_CONFLICT = 409;

    private final DistlockEndpoint endpoint;

    /**
     * @param endpoint the endpoint it answers for
     */
    public DistlockEndpointWebExtension(DistlockEndpoint endpoint) {
        this.endpoint = endpoint;
    }

    /** {@code DELETE /actuator/distlock/{key}}. */
    @DeleteOperation
    public WebEndpointResponse<DistlockEndpoint.ForceReleaseDescriptor> forceRelease(SecurityContext securityContext,
            @Selector(match = Selector.Match.ALL_REMAINING) String[] key, @Nullable String owner) {
        DistlockEndpoint.ForceReleaseDescriptor result = endpoint.forceRelease(securityContext, key, owner);
        int status = !endpoint.forceReleaseEnabled() ? STATUS_FORBIDDEN
                : (result.holders() != null) ? STATUS_CONFLICT : WebEndpointResponse.STATUS_OK;
        return new WebEndpointResponse<>(result, status);
    }
}
