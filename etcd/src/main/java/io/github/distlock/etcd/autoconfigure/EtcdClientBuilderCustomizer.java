package io.github.distlock.etcd.autoconfigure;

import io.etcd.jetcd.ClientBuilder;

/**
 * Adjusts the jetcd client that the etcd lock backend builds from {@code distlock.etcd.*}, e.g. for TLS
 * ({@code builder.sslContext(ssl -> ssl.trustManager(caFile))}) or timeouts. Not applied to an application's own
 * {@code Client} bean.
 */
@FunctionalInterface
public interface EtcdClientBuilderCustomizer {

    /** Called after the properties were applied, before the client is built. */
    void customize(ClientBuilder builder);
}
