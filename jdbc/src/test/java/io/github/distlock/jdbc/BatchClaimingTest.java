package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Batch claiming with real instances on PostgreSQL: three worker JVMs share 300 rows; a fourth claims a batch,
 * processes half of it and is killed with SIGKILL. Every row is processed exactly once (one {@code work_log} row each,
 * written in the row's transaction), the dead instance's unprocessed claims are taken over once they go stale, and no
 * row is left claimed.
 */
class BatchClaimingTest {

    private static final int ROWS = 300;
    private static final int BATCH = 10;
    private static final Duration STALE_AFTER = Duration.ofSeconds(2);
    private static final Duration RUN = Duration.ofSeconds(90);

    @RegisterExtension
    static final Database db = Database.postgres();

    @BeforeEach
    void workTable() {
        db.update("CREATE TABLE work_item (id BIGINT PRIMARY KEY, processed BOOLEAN NOT NULL, claimed_by VARCHAR(100), "
                + "claimed_at BIGINT)");
        db.update("CREATE TABLE work_log (item_id BIGINT NOT NULL, worker VARCHAR(20) NOT NULL)");
        db.update("INSERT INTO work_item (id, processed) SELECT g, FALSE FROM generate_series(1, " + ROWS + ") g");
    }

    @AfterEach
    void dropWorkTable() {
        db.update("DROP TABLE work_log");
        db.update("DROP TABLE work_item");
    }

    @Test
    void instancesProcessEveryRowExactlyOnceThoughOneIsKilledInTheMiddleOfABatch() throws Exception {
        List<HolderJvm> workers = new ArrayList<>();
        try (HolderJvm victim = start("victim", "victim")) {
            String[] midBatch = victim.await("MIDBATCH", Duration.ofSeconds(60)).split(" ");
            String deadTag = midBatch[1];
            int claimed = Integer.parseInt(midBatch[2]);
            int doneByVictim = Integer.parseInt(midBatch[3]);
            victim.kill();
            assertThat(claimed).as("rows the victim claimed").isEqualTo(BATCH);
            assertThat(count("SELECT COUNT(*) AS n FROM work_item WHERE claimed_by = ?", deadTag))
                    .as("rows still claimed by the dead instance").isEqualTo(claimed - doneByVictim);
            for (int i = 1; i <= 3; i++) {
                workers.add(start("worker-" + i, "worker"));
            }
            for (HolderJvm worker : workers) {
                worker.await("STARTED", Duration.ofSeconds(60));
            }
            for (HolderJvm worker : workers) {
                worker.send("GO");
            }
            for (HolderJvm worker : workers) {
                assertThat(worker.awaitExit(RUN)).as("exit code of a worker; its output: %s", worker.output()).isZero();
            }
            List<Map<String, Object>> duplicates = db.query("SELECT item_id, COUNT(*) AS n FROM work_log GROUP BY item_id "
                    + "HAVING COUNT(*) > 1");
            assertThat(duplicates).as("rows processed more than once").isEmpty();
            assertThat(count("SELECT COUNT(DISTINCT item_id) AS n FROM work_log")).as("rows processed").isEqualTo(ROWS);
            assertThat(count("SELECT COUNT(*) AS n FROM work_log WHERE worker = ?", "victim")).isEqualTo(doneByVictim);
            assertThat(count("SELECT COUNT(*) AS n FROM work_item WHERE processed = FALSE OR claimed_by IS NOT NULL"))
                    .as("rows left pending or claimed").isZero();
            System.out.printf("MEASURED batch claiming: %d rows, batches of %d, 3 workers; victim processed %d of its %d "
                    + "before SIGKILL; per worker: %s%n", ROWS, BATCH, doneByVictim, claimed,
                    db.query("SELECT worker, COUNT(*) AS n FROM work_log GROUP BY worker ORDER BY worker"));
        }
        finally {
            for (HolderJvm worker : workers) {
                worker.close();
            }
        }
    }

    private static HolderJvm start(String name, String role) {
        List<String> arguments = new ArrayList<>(db.connectionArguments());
        arguments.addAll(List.of(name, Integer.toString(BATCH), Long.toString(STALE_AFTER.toMillis()), role));
        return HolderJvm.start(BatchWorkerMain.class, arguments);
    }

    private static long count(String sql, Object... arguments) {
        return ((Number) db.query(sql, arguments).get(0).get("n")).longValue();
    }
}
