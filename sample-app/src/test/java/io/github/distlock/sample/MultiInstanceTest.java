package io.github.distlock.sample;

import org.junit.jupiter.api.Test;

/** The three-instance flash sale on one redis-server (the default backend), and the unsafe endpoint's control. */
class MultiInstanceTest extends MultiInstanceSale {

    @Test
    void theSameTrafficOnTheUnsafeEndpointCreatesDuplicatesOrOversells() throws Exception {
        unsafeEndpointCreatesDuplicatesOrOversells();
    }
}
