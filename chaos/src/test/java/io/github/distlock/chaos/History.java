package io.github.distlock.chaos;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a run recorded, read back from its files: every operation of every client, the leases the library reported
 * lost, and the faults.
 *
 * <p>Client history lines ({@link ChaosClientMain}), times in µs of the machine's monotonic clock:
 * <pre>
 * INV  &lt;op&gt; &lt;key&gt; &lt;t&gt;                 the operation asks for the key's lock
 * ACQ  &lt;op&gt; &lt;key&gt; &lt;t&gt; &lt;token&gt;         it holds the lock (token -1: unfenced)
 * CS   &lt;op&gt; &lt;key&gt; &lt;t&gt; &lt;result&gt; [seq]  its read-modify-write ended: ok (the store's seq), refused, interrupted
 * END  &lt;op&gt; &lt;key&gt; &lt;t&gt;                 the lock was released (the call returned)
 * FAIL &lt;op&gt; &lt;key&gt; &lt;t&gt; &lt;kind&gt;          the call failed: not-acquired, backend, other:&lt;exception&gt;
 * LOST - &lt;full key&gt; &lt;t&gt;               the library reported the lease of the key lost (LockListener#onLeaseLost)
 * </pre>
 * Fault lines ({@link Nemesis}): {@code FAULT <kind> <target> <t>}, {@code HEAL <kind> <target> <t>},
 * {@code KILLED <client> <t>}, {@code HEALED <t>} (the last fault healed).
 */
record History(List<Op> ops, List<Loss> losses, List<Fault> faults, Map<String, Long> killed, long healed) {

    /** One operation, as far as it got; times are -1 for the steps it did not reach. */
    static final class Op {
        final String client;
        final String id;
        final String key;
        long invoked = -1;
        long acquired = -1;
        long token = -1;
        long sectionEnd = -1;
        String result;
        long seq = -1;
        long ended = -1;
        String failure;

        Op(String client, String id, String key) {
            this.client = client;
            this.id = id;
            this.key = key;
        }

        boolean fenced() {
            return key.startsWith("f");
        }

        @Override
        public String toString() {
            return id + " " + key + " inv=" + invoked + " acq=" + acquired + " token=" + token + " cs=" + sectionEnd
                    + " " + result + " seq=" + seq + " end=" + ended + ((failure != null) ? " fail=" + failure : "");
        }
    }

    /** A lease the library reported lost to a client. */
    record Loss(String client, String key, long at) {
    }

    /** A fault applied ({@code healed == -1} while it lasted to the end). */
    record Fault(String kind, String target, long started, long healed) {
    }

    /** Reads the history files {@code <client>.history} and the fault log in {@code dir}. */
    static History read(Path dir, String keyPrefix) {
        Map<String, Op> ops = new LinkedHashMap<>();
        List<Loss> losses = new ArrayList<>();
        try (var files = Files.list(dir)) {
            for (Path file : files.filter(f -> f.getFileName().toString().endsWith(".history")).sorted().toList()) {
                String client = file.getFileName().toString().replace(".history", "");
                for (String line : Files.readAllLines(file)) {
                    String[] f = line.split(" ");
                    if (f.length < 4) {
                        continue; // a line cut by a SIGKILL
                    }
                    if (f[0].equals("LOST")) {
                        String key = f[2].startsWith(keyPrefix) ? f[2].substring(keyPrefix.length()) : f[2];
                        losses.add(new Loss(client, key, Long.parseLong(f[3])));
                        continue;
                    }
                    Op op = ops.computeIfAbsent(f[1], id -> new Op(client, id, f[2]));
                    long t = Long.parseLong(f[3]);
                    switch (f[0]) {
                        case "INV" -> op.invoked = t;
                        case "ACQ" -> {
                            op.acquired = t;
                            op.token = Long.parseLong(f[4]);
                        }
                        case "CS" -> {
                            op.sectionEnd = t;
                            op.result = f[4];
                            if (f.length > 5) {
                                op.seq = Long.parseLong(f[5]);
                            }
                        }
                        case "END" -> op.ended = t;
                        case "FAIL" -> {
                            op.ended = t;
                            op.failure = f[4];
                        }
                        default -> throw new IllegalStateException("Unknown history line in " + file + ": " + line);
                    }
                }
            }
            List<Fault> faults = new ArrayList<>();
            Map<String, Long> killed = new LinkedHashMap<>();
            Map<String, Integer> open = new LinkedHashMap<>();
            long healed = -1;
            for (String line : Files.readAllLines(dir.resolve("faults.log"))) {
                String[] f = line.split(" ");
                switch (f[0]) {
                    case "FAULT" -> {
                        open.put(f[1] + " " + f[2], faults.size());
                        faults.add(new Fault(f[1], f[2], Long.parseLong(f[3]), -1));
                    }
                    case "HEAL" -> {
                        Integer index = open.remove(f[1] + " " + f[2]);
                        if (index != null) {
                            Fault fault = faults.get(index);
                            faults.set(index, new Fault(fault.kind(), fault.target(), fault.started(),
                                    Long.parseLong(f[3])));
                        }
                    }
                    case "KILLED" -> killed.put(f[1], Long.parseLong(f[2]));
                    case "HEALED" -> healed = Long.parseLong(f[1]);
                    default -> {
                        // schedule and comment lines
                    }
                }
            }
            return new History(List.copyOf(ops.values()), losses, faults, killed, healed);
        }
        catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}
