/**
 * Auto-configuration of the ZooKeeper backend ({@code distlock.backend=zookeeper}) on the application's
 * {@code CuratorFramework} or one built from {@code distlock.zookeeper.*}, and those properties.
 */
@NullMarked
package io.github.distlock.zookeeper.autoconfigure;

import org.jspecify.annotations.NullMarked;
