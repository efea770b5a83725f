package io.github.distlock.testsupport;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.IntStream;

/** Starts several servers side by side: each start is mostly waiting for a process to come up. */
final class Servers {

    private Servers() {
    }

    /**
     * Starts {@code count} servers with the same options at once, on threads of their own (the common pool has a
     * single thread on a 2-CPU machine).
     *
     * @return the servers, in no particular order of readiness
     * @throws IllegalStateException when any fails to start; the others are closed then
     */
    static List<RedisServer> startAll(int count, RedisServer.Options options, String what) {
        ExecutorService executor = Executors.newFixedThreadPool(count, runnable -> {
            Thread thread = new Thread(runnable, "redis-start-" + what);
            thread.setDaemon(true);
            return thread;
        });
        try {
            List<CompletableFuture<RedisServer>> starts = IntStream.range(0, count)
                    .mapToObj(i -> CompletableFuture.supplyAsync(() -> RedisServer.start(options), executor))
                    .toList();
            List<RedisServer> started = new ArrayList<>();
            RuntimeException failure = null;
            for (CompletableFuture<RedisServer> start : starts) {
                try {
                    started.add(start.join());
                }
                catch (RuntimeException ex) {
                    failure = failure == null ? ex : failure;
                }
            }
            if (failure != null) {
                started.forEach(RedisServer::close);
                throw new IllegalStateException("Could not start the " + what, failure);
            }
            return started;
        }
        finally {
            executor.shutdown();
        }
    }
}
