/**
 * Auto-configuration of the etcd backend ({@code distlock.backend=etcd}) on the application's jetcd {@code Client}
 * or one built from {@code distlock.etcd.*} and adjusted by
 * {@link io.github.distlock.etcd.autoconfigure.EtcdClientBuilderCustomizer}s, and those properties.
 */
@NullMarked
package io.github.distlock.etcd.autoconfigure;

import org.jspecify.annotations.NullMarked;
