package io.github.distlock.zookeeper;

import java.nio.charset.StandardCharsets;
import java.util.List;

import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.common.PathUtils;
import org.jspecify.annotations.Nullable;

/**
 * Where a lock key lives in ZooKeeper, and how its lock nodes are named and ordered.
 *
 * <p>Each key is one node directly under the base path, its name the key with the characters ZooKeeper cannot take in
 * a node name percent-encoded ({@code /}, {@code %}, control and private-use characters, the names {@code .} and
 * {@code ..}). A {@code /} in a key must not make a child node: the lock node of {@code orders} would then have a
 * child {@code 42} beside its lock nodes, and every waiter would sort it in with them.
 *
 * <p>Lock nodes are named as Curator's {@code InterProcessReadWriteLock} names them (protected, ephemeral sequential:
 * {@code _c_<uuid>-__WRIT__<sequence>} and {@code _c_<uuid>-__READ__<sequence>}) and ordered the same way, by the
 * sequence after the lock name, so a Curator read/write lock on the same path excludes and is excluded by ours:
 * {@code REENTRANT}, {@code FAIR} and {@code WRITE} are its write lock, {@code READ} its read lock.
 */
final class LockPaths {

    static final String WRITE_LOCK_NAME = "__WRIT__";
    static final String READ_LOCK_NAME = "__READ__";

    private LockPaths() {
    }

    /** The path of the node whose children are the lock nodes of {@code key}. */
    static String lockPath(String basePath, String key) {
        String path = ZKPaths.makePath(basePath, segment(key));
        if (path.length() > MAX_PATH_CHARS) {
            // over ZooKeeper's packet limit (jute.maxbuffer) the server resets the connection every lock shares, and
            // the client resends the create: every other holder would hear SUSPENDED, again and again
            throw new IllegalArgumentException("Lock key of " + key.length() + " characters is too long for "
                    + "ZooKeeper: its node path would have " + path.length() + " characters, at most "
                    + MAX_PATH_CHARS + " are allowed");
        }
        return path;
    }

    /** Far below ZooKeeper's default 1 MB packet limit, even at 4 bytes a character, and far above any sane key. */
    static final int MAX_PATH_CHARS = 32_768;

    /** {@code key} as one valid node name; distinct keys give distinct names. */
    static String segment(String key) {
        if (key.equals(".") || key.equals("..")) {
            return key.replace(".", "%2E");
        }
        StringBuilder name = new StringBuilder(key.length() + 8);
        int i = 0;
        while (i < key.length()) {
            int codePoint = key.codePointAt(i);
            if (Character.isSurrogate((char) codePoint) && codePoint <= 0xFFFF) {
                // an unpaired surrogate: UTF-8 would write any of them as '?'; "%u" never comes from an escape, as
                // every '%' of a key is escaped
                name.append("%u").append(String.format("%04X", codePoint));
            }
            else if (codePoint == '/' || codePoint == '%' || isRefusedByZooKeeper(codePoint)) {
                for (byte b : new String(Character.toChars(codePoint)).getBytes(StandardCharsets.UTF_8)) {
                    name.append('%').append(Character.toUpperCase(Character.forDigit((b >> 4) & 0xF, 16)))
                            .append(Character.toUpperCase(Character.forDigit(b & 0xF, 16)));
                }
            }
            else {
                name.appendCodePoint(codePoint);
            }
            i += Character.charCount(codePoint);
        }
        return name.toString();
    }

    /** The characters {@link PathUtils#validatePath(String)} refuses, surrogates of any code point included. */
    private static boolean isRefusedByZooKeeper(int codePoint) {
        return codePoint <= 0x1F || (codePoint >= 0x7F && codePoint <= 0x9F) || (codePoint >= 0xD800 && codePoint <= 0xF8FF)
                || (codePoint >= 0xFFF0 && codePoint <= 0xFFFF) || codePoint > 0xFFFF;
    }

    /** The prefix a new lock node of this kind is created under (ZooKeeper appends the sequence). */
    static String nodePrefix(String lockPath, boolean exclusive) {
        return ZKPaths.makePath(lockPath, exclusive ? WRITE_LOCK_NAME : READ_LOCK_NAME);
    }

    /** Whether a child of a lock path is a lock node (ours or Curator's read/write lock's), and not something else. */
    static boolean isLockNode(String child) {
        return child.contains(WRITE_LOCK_NAME) || child.contains(READ_LOCK_NAME);
    }

    static boolean isWriteNode(String child) {
        return child.contains(WRITE_LOCK_NAME);
    }

    /** The sequence of a lock node, by which lock nodes are ordered (Curator's {@code fixForSorting}). */
    static String sequence(String child) {
        int index = child.lastIndexOf(WRITE_LOCK_NAME);
        if (index < 0) {
            index = child.lastIndexOf(READ_LOCK_NAME);
        }
        return child.substring(index + WRITE_LOCK_NAME.length());
    }

    /** The lock nodes among {@code children}, first come first. */
    static List<String> sortedLockNodes(List<String> children) {
        return children.stream().filter(LockPaths::isLockNode)
                .sorted((a, b) -> sequence(a).compareTo(sequence(b))).toList();
    }

    /**
     * The lock node {@code ours} must wait for, or {@code null} when it holds the lock: for an exclusive node the one
     * right before it (no herd: each waiter is woken by its own predecessor only), for a read node the nearest write
     * node before it (readers share; a writer queued ahead of a reader goes first).
     *
     * @param sorted {@link #sortedLockNodes} of the lock path, {@code ours} among them
     */
    static @Nullable String blocker(List<String> sorted, String ours, boolean exclusive) {
        int index = sorted.indexOf(ours);
        if (index < 0) {
            throw new IllegalArgumentException(ours + " is not among " + sorted);
        }
        if (exclusive) {
            return (index == 0) ? null : sorted.get(index - 1);
        }
        for (int i = index - 1; i >= 0; i--) {
            if (isWriteNode(sorted.get(i))) {
                return sorted.get(i);
            }
        }
        return null;
    }

    /** Whether a new lock of this kind would have to wait behind {@code sorted}: the quick answer of a wait of 0. */
    static boolean wouldWait(List<String> sorted, boolean exclusive) {
        return exclusive ? !sorted.isEmpty() : sorted.stream().anyMatch(LockPaths::isWriteNode);
    }
}
