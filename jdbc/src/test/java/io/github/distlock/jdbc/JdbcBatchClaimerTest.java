package io.github.distlock.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** {@link JdbcBatchClaimer}'s claims, take-overs, releases and stale claims, on H2 and MariaDB. */
class JdbcBatchClaimerTest {

    @RegisterExtension
    static final Database h2 = Database.h2();

    @RegisterExtension
    static final Database mariaDb = Database.mariaDb();

    private static final Duration STALE_AFTER = Duration.ofMillis(800);

    @BeforeEach
    void workTables() {
        for (Database db : List.of(h2, mariaDb)) {
            db.update("CREATE TABLE claim_item (id BIGINT PRIMARY KEY, processed BOOLEAN NOT NULL, claimed_by VARCHAR(100), "
                    + "claimed_at BIGINT)");
            for (int id = 1; id <= 20; id++) {
                db.update("INSERT INTO claim_item (id, processed) VALUES (?, FALSE)", id);
            }
        }
    }

    @AfterEach
    void dropWorkTables() {
        for (Database db : List.of(h2, mariaDb)) {
            db.update("DROP TABLE claim_item");
        }
    }

    private static Database db(Database.Kind kind) {
        return (kind == Database.Kind.H2) ? h2 : mariaDb;
    }

    private static JdbcBatchClaimer claimer(Database db) {
        return new JdbcBatchClaimer(db.dataSource(), "claim_item", "id", "claimed_by", "claimed_at", "processed = FALSE",
                STALE_AFTER);
    }

    private static long claimedBy(Database db, String tag) {
        return ((Number) db.query("SELECT COUNT(*) AS n FROM claim_item WHERE claimed_by = ?", tag).get(0).get("n"))
                .longValue();
    }

    @ParameterizedTest
    @EnumSource(value = Database.Kind.class, names = {"H2", "MARIADB"})
    void twoInstancesClaimDisjointBatchesTaggedWithTheDatabasesTime(Database.Kind kind) {
        Database db = db(kind);
        JdbcBatchClaimer one = claimer(db);
        JdbcBatchClaimer two = claimer(db);
        JdbcBatchClaimer.Batch first = one.claim(8);
        JdbcBatchClaimer.Batch second = two.claim(8);
        assertThat(first.ids()).hasSize(8);
        assertThat(second.ids()).hasSize(8);
        Set<Object> both = new HashSet<>(first.ids());
        both.retainAll(second.ids());
        assertThat(both).as("rows claimed by both").isEmpty();
        assertThat(first.tag()).startsWith(one.instanceTag() + ":");
        assertThat(claimedBy(db, first.tag())).isEqualTo(8);
        // only 4 unclaimed rows are left
        assertThat(claimer(db).claim(8).ids()).hasSize(4);
        assertThat(claimer(db).claim(8).isEmpty()).isTrue();
    }

    @ParameterizedTest
    @EnumSource(value = Database.Kind.class, names = {"H2", "MARIADB"})
    void aStaleClaimIsClaimedAgainAndItsFirstClaimerCanNoLongerTakeTheRowOver(Database.Kind kind) throws Exception {
        Database db = db(kind);
        JdbcBatchClaimer dead = claimer(db);
        JdbcBatchClaimer.Batch stale = dead.claim(20);
        assertThat(stale.ids()).hasSize(20);
        JdbcBatchClaimer other = claimer(db);
        assertThat(other.claim(5).isEmpty()).as("a claim before the others went stale").isTrue();
        List<JdbcBatchClaimer.Batch> taken = new ArrayList<>();
        await().atMost(STALE_AFTER.plusSeconds(5)).until(() -> {
            JdbcBatchClaimer.Batch batch = other.claim(20);
            taken.add(batch);
            return batch.ids().size() == 20;
        });
        Object id = stale.ids().get(0);
        try (var connection = db.dataSource().getConnection()) {
            connection.setAutoCommit(false);
            assertThat(dead.takeOver(connection, id, stale.tag())).as("take-over by the stale claimer").isFalse();
            assertThat(other.takeOver(connection, id, taken.get(taken.size() - 1).tag())).isTrue();
            connection.commit();
        }
    }

    @ParameterizedTest
    @EnumSource(value = Database.Kind.class, names = {"H2", "MARIADB"})
    void processBatchCommitsEachRowAndReleasesARowWhoseWorkFailed(Database.Kind kind) {
        Database db = db(kind);
        JdbcBatchClaimer claimer = claimer(db);
        int done = claimer.processBatch(5, (connection, id) -> {
            try (var update = connection.prepareStatement("UPDATE claim_item SET processed = TRUE WHERE id = ?")) {
                update.setObject(1, id);
                update.executeUpdate();
            }
        });
        assertThat(done).isEqualTo(5);
        assertThat(db.query("SELECT id FROM claim_item WHERE processed = TRUE")).hasSize(5);
        assertThat(db.query("SELECT id FROM claim_item WHERE claimed_by IS NOT NULL")).as("claims left").isEmpty();

        assertThatThrownBy(() -> claimer.processBatch(5, (connection, id) -> {
            try (var update = connection.prepareStatement("UPDATE claim_item SET processed = TRUE WHERE id = ?")) {
                update.setObject(1, id);
                update.executeUpdate();
            }
            throw new IllegalStateException("work failed");
        })).isInstanceOf(JdbcBatchClaimer.RowWorkException.class).hasMessageContaining("work failed")
                .hasMessageContaining("claim_item");
        assertThat(db.query("SELECT id FROM claim_item WHERE processed = TRUE")).as("rolled back").hasSize(5);
        assertThat(db.query("SELECT id FROM claim_item WHERE claimed_by IS NOT NULL"))
                .as("claims left after a failed batch: the failed row and the rest are released").isEmpty();
    }

    @Test
    void namesThatAreNotIdentifiersAreRefused() {
        assertThatThrownBy(() -> new JdbcBatchClaimer(h2.dataSource(), "claim_item; drop table x", "id", "claimed_by",
                "claimed_at", "processed = FALSE", STALE_AFTER)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("table").hasMessageContaining("claim_item; drop table x");
        assertThatThrownBy(() -> new JdbcBatchClaimer(h2.dataSource(), "claim_item", "id", "claimed_by", "claimed_at",
                " ", STALE_AFTER)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pendingCondition");
    }
}
