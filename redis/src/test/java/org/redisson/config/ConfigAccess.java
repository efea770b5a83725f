package org.redisson.config;

/** Reads the server settings Redisson keeps behind protected getters, for assertions on the Config we build. */
public final class ConfigAccess {

    private ConfigAccess() {
    }

    public static SingleServerConfig single(Config config) {
        return config.getSingleServerConfig();
    }

    public static SentinelServersConfig sentinel(Config config) {
        return config.getSentinelServersConfig();
    }

    public static ClusterServersConfig cluster(Config config) {
        return config.getClusterServersConfig();
    }

    public static ReplicatedServersConfig replicated(Config config) {
        return config.getReplicatedServersConfig();
    }
}
