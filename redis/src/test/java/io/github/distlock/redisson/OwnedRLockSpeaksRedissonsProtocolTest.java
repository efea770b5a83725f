package io.github.distlock.redisson;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;
import org.redisson.RedissonLock;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link OwnedRLock}'s try sends Redisson's own acquisition script, copied because Redisson keeps it package-private:
 * the copy must be the very text the Redisson on the class path carries (a compile-time constant in its class file), or
 * distlock's {@code REENTRANT} callers and plain {@code RLock} callers of one key would no longer speak one protocol.
 */
class OwnedRLockSpeaksRedissonsProtocolTest {

    @Test
    void theTryScriptIsRedissonsOwn() throws IOException {
        byte[] classFile;
        try (InputStream in = RedissonLock.class.getResourceAsStream("RedissonLock.class")) {
            assertThat(in).as("RedissonLock's class file").isNotNull();
            classFile = in.readAllBytes();
        }
        // ASCII: the class file's modified UTF-8 is the same bytes
        String constants = new String(classFile, StandardCharsets.ISO_8859_1);
        assertThat(constants).as("Redisson's RedissonLock.class constants").contains(OwnedRLock.TRY_SCRIPT);
    }
}
