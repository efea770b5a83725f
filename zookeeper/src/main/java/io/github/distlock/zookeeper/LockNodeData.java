package io.github.distlock.zookeeper;

import java.nio.charset.StandardCharsets;

import io.github.distlock.LockType;
import org.jspecify.annotations.Nullable;

/**
 * What a lock node of ours says about its acquisition, written as the node's data when it is created: the owner as
 * {@link ZooKeeperLockProvider#ownerName} names it ({@code <instance id>:<owner id>}) and the lock type, as two lines
 * of UTF-8. A node without them (a plain Curator lock on the same path) is read as {@code null}: its owner is then
 * named by the node.
 *
 * @param owner {@code <instance id>:<owner id>}
 * @param type the requested type, which tells a {@code WRITE} lock from the other exclusive ones
 */
record LockNodeData(String owner, LockType type) {

    byte[] encode() {
        return (owner + "\n" + type.name()).getBytes(StandardCharsets.UTF_8);
    }

    /** The instance id: the owner up to its last colon. */
    String instanceId() {
        return owner.substring(0, owner.lastIndexOf(':'));
    }

    /** The mode an operator reads: {@code write} and {@code read} for a read/write lock, else {@code exclusive}. */
    String mode() {
        return switch (type) {
            case READ -> "read";
            case WRITE -> "write";
            case REENTRANT, FAIR -> "exclusive";
        };
    }

    /** The data of a node, or {@code null} when it is not ours (empty, or written by someone else). */
    static @Nullable LockNodeData decode(byte @Nullable [] data) {
        if (data == null || data.length == 0) {
            return null;
        }
        String text = new String(data, StandardCharsets.UTF_8);
        int newline = text.indexOf('\n');
        if (newline <= 0 || text.lastIndexOf(':', newline) <= 0) {
            return null;
        }
        try {
            return new LockNodeData(text.substring(0, newline), LockType.valueOf(text.substring(newline + 1)));
        }
        catch (IllegalArgumentException notOurs) {
            return null;
        }
    }
}
