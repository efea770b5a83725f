package io.github.distlock.actuate;

import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension;

/**
 * The HTTP face of {@link DistlockEndpoint}'s force release: {@code 403 Forbidden} while
 * {@code distlock.actuator.force-release-enabled} is off, so that a script's {@code curl --fail} fails; otherwise
 * {@code 200} with the holders evicted (none when nobody held the key).
 */
@EndpointWebExtension(endpoint = DistlockEndpoint.class)
public class DistlockEndpointWebExtension {

    private static final int STATUS_FORBIDDEN = 403;

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
            @Selector(match = Selector.Match.ALL_REMAINING) String[] key) {
        DistlockEndpoint.ForceReleaseDescriptor result = endpoint.forceRelease(securityContext, key);
        return new WebEndpointResponse<>(result, endpoint.forceReleaseEnabled() ? WebEndpointResponse.STATUS_OK
                : STATUS_FORBIDDEN);
    }
}
