package io.github.distlock.sample;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

import io.github.distlock.idempotency.IdempotencyStore;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

/**
 * The marks of {@code Idempotency-Key} requests in the shop's own database (table {@code idempotency_mark}), for
 * {@code distlock.backend=jdbc} (or {@code zookeeper}, {@code etcd}), where there is no Redis to keep them: an example of the {@link IdempotencyStore}
 * SPI. With Redis, distlock's own store is used instead.
 *
 * <p>A mark is written only by the holder of its key's lock, so the update-else-insert below has no concurrent
 * writer. Expired rows are ignored by reads and replaced by the next write; a real service would also delete them
 * with a periodic job.
 */
@Component
// every backend but Redis (jdbc, zookeeper, etcd): without Redis, distlock has no store of its own for the marks
@ConditionalOnExpression("!'${distlock.backend:redis}'.equalsIgnoreCase('redis')")
public class JdbcIdempotencyStore implements IdempotencyStore {

    private final JdbcClient jdbc;
    private final Clock clock = Clock.systemUTC();

    JdbcIdempotencyStore(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    @Override
    public String get(String key) {
        return jdbc.sql("SELECT mark FROM idempotency_mark WHERE mark_key = ? AND expires_at > ?")
                .params(key, now()).query(String.class).optional().orElse(null);
    }

    @Override
    public void put(String key, String mark, Duration ttl) {
        Timestamp expires = Timestamp.from(clock.instant().plus(ttl));
        if (jdbc.sql("UPDATE idempotency_mark SET mark = ?, expires_at = ? WHERE mark_key = ?")
                .params(mark, expires, key).update() == 0) {
            jdbc.sql("INSERT INTO idempotency_mark (mark_key, mark, expires_at) VALUES (?, ?, ?)")
                    .params(key, mark, expires).update();
        }
    }

    /**
     * Writes the mark only where no live one is: an expired row is taken over by a conditional update, a missing one by
     * an insert whose duplicate-key failure means "another call wrote it first". Portable SQL (H2, PostgreSQL).
     */
    @Override
    public boolean putIfAbsent(String key, String mark, Duration ttl) {
        Timestamp expires = Timestamp.from(clock.instant().plus(ttl));
        if (jdbc.sql("UPDATE idempotency_mark SET mark = ?, expires_at = ? WHERE mark_key = ? AND expires_at <= ?")
                .params(mark, expires, key, now()).update() == 1) {
            return true;
        }
        try {
            return jdbc.sql("INSERT INTO idempotency_mark (mark_key, mark, expires_at) VALUES (?, ?, ?)")
                    .params(key, mark, expires).update() == 1;
        }
        catch (org.springframework.dao.DuplicateKeyException live) {
            return false;
        }
    }

    @Override
    public boolean delete(String key) {
        return jdbc.sql("DELETE FROM idempotency_mark WHERE mark_key = ? AND expires_at > ?").params(key, now())
                .update() > 0;
    }

    private Timestamp now() {
        return Timestamp.from(Instant.now(clock));
    }
}
