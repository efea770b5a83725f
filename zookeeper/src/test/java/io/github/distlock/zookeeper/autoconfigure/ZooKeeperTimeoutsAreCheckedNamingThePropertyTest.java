package io.github.distlock.zookeeper.autoconfigure;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * ZooKeeper counts its timeouts in an {@code int} of milliseconds: a longer one, up to the largest {@code Duration},
 * is refused naming the property (it threw an {@link ArithmeticException} without a name from {@code toMillis()}).
 */
class ZooKeeperTimeoutsAreCheckedNamingThePropertyTest {

    private static final Duration LARGEST = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);

    @Test
    void theLargestSessionAndConnectionTimeoutsAreRefusedNamingTheProperty() {
        DistlockZooKeeperProperties properties = new DistlockZooKeeperProperties();
        assertThatThrownBy(() -> properties.setSessionTimeout(LARGEST)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("distlock.zookeeper.session-timeout must be between PT1S and "
                        + Duration.ofMillis(Integer.MAX_VALUE) + ", was " + LARGEST);
        assertThatThrownBy(() -> properties.setConnectionTimeout(LARGEST)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("distlock.zookeeper.connection-timeout must be between PT0.001S and "
                        + Duration.ofMillis(Integer.MAX_VALUE) + ", was " + LARGEST);
        assertThatThrownBy(() -> properties.setSessionTimeout(Duration.ofNanos(999_999)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("distlock.zookeeper.session-timeout must be between PT1S");
        properties.setSessionTimeout(Duration.ofMillis(Integer.MAX_VALUE));
        assertThat(properties.getSessionTimeout()).isEqualTo(Duration.ofMillis(Integer.MAX_VALUE));
    }
}
