package io.github.distlock.sample;

import java.util.List;

import io.github.distlock.testsupport.EtcdServer;

/**
 * The three-instance flash sale with its locks on one etcd server ({@code distlock.backend=etcd}); needs an {@code etcd}
 * binary (see {@link EtcdServer}).
 */
class MultiInstanceEtcdTest extends MultiInstanceSale {

    private EtcdServer etcd;

    @Override
    List<String> startLockBackend() {
        etcd = EtcdServer.start();
        return List.of("--distlock.backend=etcd", "--distlock.etcd.endpoints=" + etcd.endpoint(),
                "--sample.embedded-redis.enabled=false", "--management.health.redis.enabled=false");
    }

    @Override
    void stopLockBackend() {
        if (etcd != null) {
            etcd.close();
        }
    }
}
