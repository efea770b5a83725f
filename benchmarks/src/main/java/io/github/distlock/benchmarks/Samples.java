package io.github.distlock.benchmarks;

import java.util.Arrays;

/** A growable list of {@code long} samples with exact percentiles; one per thread, merged at the end. */
final class Samples {

    private long[] values = new long[1024];
    private int size;

    void add(long value) {
        if (size == values.length) {
            values = Arrays.copyOf(values, size * 2);
        }
        values[size++] = value;
    }

    long get(int index) {
        return values[index];
    }

    int size() {
        return size;
    }

    void clear() {
        size = 0;
    }

    void addAll(Samples other) {
        for (int i = 0; i < other.size; i++) {
            add(other.values[i]);
        }
    }

    /** Sorts in place; call before {@link #percentile}. */
    Samples sorted() {
        Arrays.sort(values, 0, size);
        return this;
    }

    /** The nearest-rank percentile {@code p} (0..100) of sorted samples; {@code 0} when empty. */
    long percentile(double p) {
        if (size == 0) {
            return 0;
        }
        int rank = (int) Math.ceil(p / 100.0 * size);
        return values[Math.min(size - 1, Math.max(0, rank - 1))];
    }

    long sum() {
        long sum = 0;
        for (int i = 0; i < size; i++) {
            sum += values[i];
        }
        return sum;
    }
}
