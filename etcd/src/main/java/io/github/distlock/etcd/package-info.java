/**
 * The etcd lock backend: {@link io.github.distlock.etcd.EtcdLockProvider}, a key per acquisition attached to a
 * lease, the lowest create revision holding the lock, through jetcd.
 */
@NullMarked
package io.github.distlock.etcd;

import org.jspecify.annotations.NullMarked;
