/**
 * The ZooKeeper lock backend: {@link io.github.distlock.zookeeper.ZooKeeperLockProvider}, ZooKeeper's lock recipe
 * (an ephemeral sequential node per acquisition) run asynchronously on Apache Curator.
 */
@NullMarked
package io.github.distlock.zookeeper;

import org.jspecify.annotations.NullMarked;
