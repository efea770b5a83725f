package io.github.distlock.benchmarks;

import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/** Table cells the plain harnesses print alike. */
final class Cells {

    /** The caption of a table of {@link #perCycle} cells of Redis commands counted by {@link Counters}. */
    static final String REDIS_COMMANDS_CAPTION = "Redis commands per cycle by name (INFO commandstats deltas; commands "
            + "inside scripts included; ≥ 0.01 per cycle):";

    private Cells() {
    }

    /** Milliseconds with three significant digits or so: 0.123, 1.23, 12.3, 123. */
    static String ms(long nanos) {
        double ms = nanos / 1e6;
        String format = (ms >= 100) ? "%.0f ms" : (ms >= 10) ? "%.1f ms" : (ms >= 1) ? "%.2f ms" : "%.3f ms";
        return String.format(Locale.ROOT, format, ms);
    }

    /** Ratios with two decimals, separated by spaces: {@code 0.98 1.03}. */
    static String ratios(double[] values) {
        return Arrays.stream(values).mapToObj(v -> String.format(Locale.ROOT, "%.2f", v))
                .collect(Collectors.joining(" "));
    }

    /**
     * The operations per cycle of at least 0.005 (0.01 once rounded), in the map's order, each formatted with
     * {@code format} (name, then per cycle) and joined with {@code separator}.
     */
    static String perCycle(Map<String, Double> byName, String format, String separator) {
        return byName.entrySet().stream().filter(e -> e.getValue() >= 0.005)
                .map(e -> String.format(Locale.ROOT, format, e.getKey(), e.getValue()))
                .collect(Collectors.joining(separator));
    }

    /** The first four operations per cycle, one decimal: {@code evalsha 2.0, publish 1.0}. */
    static String top(Map<String, Double> byName) {
        return byName.entrySet().stream().limit(4)
                .map(e -> String.format(Locale.ROOT, "%s %.1f", e.getKey(), e.getValue()))
                .collect(Collectors.joining(", "));
    }
}
