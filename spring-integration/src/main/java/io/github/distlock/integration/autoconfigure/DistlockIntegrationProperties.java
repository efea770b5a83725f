package io.github.distlock.integration.autoconfigure;

import io.github.distlock.integration.DistlockLockRegistry;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Settings of distlock's Spring Integration support, under {@code distlock.integration.*}.
 */
@ConfigurationProperties("distlock.integration")
public class DistlockIntegrationProperties {

    private final LockRegistry lockRegistry = new LockRegistry();

    /** The {@code LockRegistry} settings. */
    public LockRegistry getLockRegistry() {
        return lockRegistry;
    }

    /** Settings of the {@code LockRegistry} bean, under {@code distlock.integration.lock-registry.*}. */
    public static class LockRegistry {

        /**
         * Whether to define a Spring Integration LockRegistry bean on distlock's backend when the application defines
         * none.
         */
        private boolean enabled = true;

        /**
         * Put before every registry key, after distlock.key-prefix: obtain("orders") locks
         * "{distlock.key-prefix}integration:orders" by default. May be empty.
         */
        private String keyPrefix = DistlockLockRegistry.DEFAULT_KEY_PREFIX;

        /**
         * Whether every acquisition takes a fencing token (DistlockLock.fencingToken()). Not set: fenced when the
         * backend supports fenced locks (every distlock backend does); true on a backend without them fails the
         * startup.
         */
        private @Nullable Boolean fenced;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public String getKeyPrefix() {
            return keyPrefix;
        }

        /**
         * @throws IllegalArgumentException naming the property when {@code null}
         */
        public void setKeyPrefix(String keyPrefix) {
            if (keyPrefix == null) {
                throw new IllegalArgumentException("distlock.integration.lock-registry.key-prefix must not be null; "
                        + "set it empty for no prefix");
            }
            this.keyPrefix = keyPrefix;
        }

        public @Nullable Boolean getFenced() {
            return fenced;
        }

        public void setFenced(@Nullable Boolean fenced) {
            this.fenced = fenced;
        }
    }
}
