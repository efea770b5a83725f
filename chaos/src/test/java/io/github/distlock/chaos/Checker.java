package io.github.distlock.chaos;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import io.github.distlock.chaos.History.Fault;
import io.github.distlock.chaos.History.Op;

/**
 * Reads a run's {@link History} and the store's final sets after the run, per key, for the fenced keys and the unfenced
 * keys apart. Nothing here trusts the store's own checks: tokens and acceptance order come from what the clients were
 * told.
 * <ul>
 * <li><b>overlaps</b>: operations that got the lock while another operation on the key was between its acquisition and
 * the end of its read-modify-write (the end of a killed client's operation is its kill);
 * <li><b>stale_accepted</b>: writes the store acknowledged whose token was not higher than that of a write it had
 * acknowledged before on the key (fenced keys);
 * <li><b>lost_updates</b>: acknowledged elements missing from the key's final set; <b>phantoms</b>: elements in a set
 * that no operation which held the key's lock ever wrote;
 * <li><b>lease losses</b>: detected are operations another operation overlapped (of two fenced holders the one with the
 * lower token, otherwise the earlier one unless the later one's grant came late), or whose fenced read or write the
 * store refused (their lease must have gone), whose client lived until 2 s after their release (a killed client reports nothing);
 * reported are those of them whose client got a
 * {@code LOST} report for the key between the acquisition and 2 s after the release; unreported losses while a
 * server was killed, cut off or failed over are counted apart (a failover's split brain: the holder's own server still
 * has its lock), any other unreported loss is a defect;
 * <li><b>recovery_ms</b>: after the last fault healed, the longest time until a key was granted again;
 * <li><b>unexplained</b> overlaps: those whose earlier holder's client was neither paused nor cut off while it held,
 * and during which no server was killed or failed over (within a lease of the holder's start): not the documented limit.
 * </ul>
 */
final class Checker {

    /** How long after its release a lease-loss report still counts for an operation. */
    private static final long REPORT_GRACE_US = 2_000_000;

    /** A grant held up by a stall reaches its holder this soon after the stall ends (the lease: 3 s). */
    private static final long GRANT_AFTER_STALL_US = 3_000_000;

    record Verdict(boolean fenced, int ops, int acknowledged, int overlaps, int unexplained, int staleAccepted,
            int lostUpdates, int phantoms, int duplicateTokens, int lossesDetected, int lossesReported,
            int lossesUnreportedInFailover, long recoveryMs, Map<String, Integer> explainedBy, List<String> examples) {

        /** Losses neither reported nor explained by a server fault: a defect. */
        int lossesUnreportedUnexplained() {
            return lossesDetected - lossesReported - lossesUnreportedInFailover;
        }
    }

    private Checker() {
    }

    static Verdict check(History history, Map<String, List<String>> finalSets, boolean fenced, long leaseUs) {
        List<Op> ops = history.ops().stream().filter(op -> op.fenced() == fenced).toList();
        Map<String, List<Op>> byKey = ops.stream().collect(Collectors.groupingBy(op -> op.key, TreeMap::new,
                Collectors.toList()));
        int acknowledged = 0;
        int overlaps = 0;
        int unexplained = 0;
        int stale = 0;
        int lost = 0;
        int phantoms = 0;
        int duplicates = 0;
        Set<Op> detected = new HashSet<>();
        Map<String, Integer> explainedBy = new TreeMap<>();
        List<String> examples = new ArrayList<>();
        long recovery = 0;
        for (Map.Entry<String, List<Op>> entry : byKey.entrySet()) {
            String key = entry.getKey();
            List<Op> held = entry.getValue().stream().filter(op -> op.acquired >= 0)
                    .sorted(Comparator.comparingLong(op -> op.acquired)).toList();
            // every pair of holders at once is judged on its own: one pair explained by a stall must not hide another
            // pair of healthy holders at the same time
            for (int i = 0; i < held.size(); i++) {
                Op later = held.get(i);
                boolean overlapped = false;
                for (int j = 0; j < i; j++) {
                    Op earlier = held.get(j);
                    if (later.acquired < end(earlier, history)) {
                        overlapped = true;
                        detected.add(loser(earlier, later, history));
                        String why = explanation(earlier, later, history);
                        if (why == null) {
                            unexplained++;
                            example(examples, "unexplained overlap: " + earlier + " / " + later);
                        }
                        else {
                            explainedBy.merge(why, 1, Integer::sum);
                        }
                    }
                }
                if (overlapped) {
                    overlaps++;
                }
            }
            if (fenced) {
                List<Op> writes = held.stream().filter(op -> "ok".equals(op.result))
                        .sorted(Comparator.comparingLong(op -> op.seq)).toList();
                long last = Long.MIN_VALUE;
                for (Op write : writes) {
                    if (write.token <= last) {
                        stale++;
                        example(examples, "stale write accepted: " + write + " after token " + last);
                    }
                    last = Math.max(last, write.token);
                }
                Map<Long, Integer> tokens = new HashMap<>();
                held.forEach(op -> tokens.merge(op.token, 1, Integer::sum));
                for (Map.Entry<Long, Integer> token : tokens.entrySet()) {
                    if (token.getValue() > 1) {
                        duplicates += token.getValue() - 1;
                        example(examples, "token " + token.getKey() + " granted " + token.getValue() + " times on "
                                + key);
                    }
                }
                held.stream().filter(op -> "refused".equals(op.result)).forEach(detected::add);
            }
            Set<String> present = new HashSet<>(finalSets.getOrDefault(key, List.of()));
            Set<String> wrote = new HashSet<>();
            for (Op op : held) {
                wrote.add(op.id);
                if ("ok".equals(op.result)) {
                    acknowledged++;
                    if (!present.contains(op.id)) {
                        lost++;
                        example(examples, "lost update: " + op);
                    }
                }
            }
            for (String element : present) {
                if (!wrote.contains(element)) {
                    phantoms++;
                    example(examples, "phantom element " + element + " in " + key);
                }
            }
            if (history.healed() >= 0) {
                long firstAfter = held.stream().mapToLong(op -> op.acquired).filter(t -> t >= history.healed())
                        .min().orElse(-1);
                recovery = (firstAfter < 0 || recovery < 0) ? -1 : Math.max(recovery, firstAfter - history.healed());
                if (firstAfter < 0) {
                    example(examples, "key " + key + " never granted after the last fault healed");
                }
            }
        }
        int reported = 0;
        int unreportedInFailover = 0;
        // a client killed before it could have reported reports nothing
        List<Op> alive = detected.stream().filter(op -> op.sectionEnd >= 0
                && history.killed().getOrDefault(op.client, Long.MAX_VALUE) > reportDeadline(op)).toList();
        for (Op op : alive) {
            long until = reportDeadline(op);
            boolean told = history.losses().stream().anyMatch(loss -> loss.client().equals(op.client)
                    && loss.key().equals(op.key) && loss.at() >= op.acquired && loss.at() <= until);
            if (told) {
                reported++;
            }
            else if (duringServerFault(op, history, leaseUs)) {
                // a failover's split brain: the holder's own server still had its lock while it held
                unreportedInFailover++;
            }
            else {
                example(examples, "lease loss not reported: " + op);
            }
        }
        return new Verdict(fenced, ops.size(), acknowledged, overlaps, unexplained, stale, lost, phantoms, duplicates,
                alive.size(), reported, unreportedInFailover, (recovery < 0) ? -1 : recovery / 1000, Map.copyOf(explainedBy),
                examples);
    }

    private static long reportDeadline(Op op) {
        return ((op.ended >= 0) ? op.ended : op.sectionEnd) + REPORT_GRACE_US;
    }

    /**
     * Whether a server was killed, cut off or failed over while the operation held (or a lease before): with Redis
     * replication, a failover can leave two masters for a while (the old one accepts writes until Sentinel or the
     * cluster turns it into a replica), each with a holder of the key that its own server confirms; the earlier holder
     * cannot learn of the later one before it releases. The fault's heal includes the topology serving again as one.
     */
    private static boolean duringServerFault(Op op, History history, long leaseUs) {
        long end = (op.ended >= 0) ? op.ended : op.sectionEnd;
        for (Fault fault : history.faults()) {
            long healed = (fault.healed() >= 0) ? fault.healed() : Long.MAX_VALUE;
            if (!fault.kind().endsWith("-client") && fault.started() < end && healed > op.acquired) {
                return true;
            }
        }
        return false;
    }

    /** When an operation stopped acting on the key's data: the end of its section, or its client's kill. */
    private static long end(Op op, History history) {
        if (op.sectionEnd >= 0) {
            return op.sectionEnd;
        }
        Long killed = history.killed().get(op.client);
        return (killed != null) ? killed : Long.MAX_VALUE;
    }

    /**
     * Which of two overlapping holders had lost its lock: for fenced keys the one with the lower token (tokens grow per
     * key with each grant); otherwise the earlier one, if its client was stalled while it held, or unless the later
     * one's grant came late (below).
     */
    private static Op loser(Op earlier, Op later, History history) {
        if (earlier.token >= 0 && later.token >= 0) {
            return (later.token < earlier.token) ? later : earlier;
        }
        if (heldThroughStall(earlier, later.acquired, history)) {
            return earlier;
        }
        return grantHeldUp(later, history) ? later : earlier;
    }

    /** Whether the operation's client was paused or cut off while the operation held, before {@code before}. */
    private static boolean heldThroughStall(Op op, long before, History history) {
        for (Fault fault : history.faults()) {
            long healed = (fault.healed() >= 0) ? fault.healed() : Long.MAX_VALUE;
            if (fault.target().equals(op.client) && isStall(fault) && fault.started() < before
                    && healed > op.acquired) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether the operation's grant was held up by a stall of its client: paused or cut off after it asked for the lock,
     * the grant arriving within a lease of the stall's end. Its lease ran out before the reply reached it (as if it had
     * been paused right after acquiring).
     */
    private static boolean grantHeldUp(Op op, History history) {
        long asked = (op.invoked >= 0) ? op.invoked : op.acquired;
        for (Fault fault : history.faults()) {
            long healed = (fault.healed() >= 0) ? fault.healed() : Long.MAX_VALUE;
            if (fault.target().equals(op.client) && isStall(fault) && fault.started() < op.acquired && healed > asked
                    && op.acquired - healed <= GRANT_AFTER_STALL_US) {
                return true;
            }
        }
        return false;
    }

    private static boolean isStall(Fault fault) {
        return fault.kind().equals("pause-client") || fault.kind().equals("cut-client");
    }

    /**
     * Why an overlap is the documented limit, or {@code null} when it is not: {@code stall} — one of the two holders'
     * clients was paused or cut off (longer than the lease, as every such fault here) while it held, or while it
     * waited with its grant arriving within a lease of the stall's end (a grant held up by the stall, its lease run out
     * before the reply came); {@code server} — a server was killed, cut off or failed over while the earlier holder
     * held (a session or lease that expired with its server away; on Redis, a failover's split brain).
     */
    private static String explanation(Op earlier, Op later, History history) {
        if (heldThroughStall(earlier, later.acquired, history) || grantHeldUp(earlier, history)
                || grantHeldUp(later, history)) {
            return "stall";
        }
        for (Fault fault : history.faults()) {
            long healed = (fault.healed() >= 0) ? fault.healed() : Long.MAX_VALUE;
            boolean serverFault = !fault.kind().endsWith("-client");
            if (serverFault && fault.started() < later.acquired && healed > earlier.acquired) {
                return "server";
            }
        }
        return null;
    }

    private static void example(List<String> examples, String text) {
        if (examples.size() < 20) {
            examples.add(text);
        }
    }
}
