package io.github.distlock.chaos;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.github.distlock.chaos.Checker.Verdict;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The checker finds what it claims to find, on histories written by hand: a run's verdict can only be trusted if each
 * of its counts can be non-zero.
 */
class CheckerTest {

    private static final long LEASE_US = 3_000_000;

    @TempDir
    Path dir;

    private Verdict check(String faults, Map<String, List<String>> sets, boolean fenced, String... lines)
            throws IOException {
        Files.writeString(dir.resolve("c1.history"), String.join("\n", lines) + "\n");
        Files.writeString(dir.resolve("faults.log"), faults);
        return Checker.check(History.read(dir, "chaos:"), sets, fenced, LEASE_US);
    }

    @Test
    void aCleanHistoryHasNothingToReport() throws IOException {
        Verdict verdict = check("HEALED 1500\n", Map.of("f0", List.of("c1-0-0", "c1-0-1")), true,
                "INV c1-0-0 f0 1000", "ACQ c1-0-0 f0 1001 5", "CS c1-0-0 f0 1100 ok 1", "END c1-0-0 f0 1101",
                "INV c1-0-1 f0 1200", "ACQ c1-0-1 f0 2000 6", "CS c1-0-1 f0 2100 ok 2", "END c1-0-1 f0 2101");
        assertThat(verdict).extracting(Verdict::overlaps, Verdict::staleAccepted, Verdict::lostUpdates,
                Verdict::phantoms, Verdict::duplicateTokens, Verdict::lossesDetected, Verdict::unexplained)
                .containsOnly(0);
        assertThat(verdict.acknowledged()).isEqualTo(2);
        assertThat(verdict.recoveryMs()).isZero(); // granted 0.5 ms after the heal
        assertThat(verdict.examples()).isEmpty();
    }

    @Test
    void anOverlapDuringAPauseIsCountedExplainedAndItsUnreportedLossNamed() throws IOException {
        // c1-0-0 holds u0 from 1000 to 9000; c2-0-0 gets it at 5000; the holder's client was paused from 2000 to 8000
        Files.writeString(dir.resolve("c2.history"), String.join("\n", "INV c2-0-0 u0 1100", "ACQ c2-0-0 u0 5000 -1",
                "CS c2-0-0 u0 5100 ok 1", "END c2-0-0 u0 5200") + "\n");
        Verdict verdict = check("FAULT pause-client c1 2000\nHEAL pause-client c1 8000\n",
                Map.of("u0", List.of("c1-0-0")), false,
                "INV c1-0-0 u0 900", "ACQ c1-0-0 u0 1000 -1", "CS c1-0-0 u0 9000 ok 2", "END c1-0-0 u0 9100");
        assertThat(verdict.overlaps()).isEqualTo(1);
        assertThat(verdict.unexplained()).isZero();
        assertThat(verdict.lostUpdates()).isEqualTo(1); // c2-0-0's element, overwritten by the stale holder
        assertThat(verdict.lossesDetected()).isEqualTo(1);
        assertThat(verdict.lossesReported()).isZero();
        assertThat(verdict.lossesUnreportedUnexplained()).isEqualTo(1);
        assertThat(verdict.examples()).anyMatch(text -> text.startsWith("lease loss not reported: c1-0-0"));
    }

    @Test
    void anUnreportedLossDuringAFailoverIsCountedApartFromADefect() throws IOException {
        Verdict verdict = check("FAULT failover server 1500\nHEAL failover server 20000\n",
                Map.of("f0", List.of("c1-1-0")), true,
                "ACQ c1-0-0 f0 1000 7", "ACQ c1-1-0 f0 2000 8", "CS c1-1-0 f0 2100 ok 1", "CS c1-0-0 f0 3000 refused",
                "END c1-0-0 f0 3100");
        assertThat(verdict.lossesDetected()).isEqualTo(1);
        assertThat(verdict.lossesReported()).isZero();
        assertThat(verdict.lossesUnreportedInFailover()).isEqualTo(1);
        assertThat(verdict.lossesUnreportedUnexplained()).isZero();
        assertThat(verdict.examples()).isEmpty();
    }

    @Test
    void aGrantHeldUpByAStallIsTheLoserAndExplained() throws IOException {
        // c2 asked at 900 and was cut off until 5000; its grant (token 6, issued before c1's 7) arrived at 5000
        Files.writeString(dir.resolve("c2.history"), String.join("\n", "INV c2-0-0 f0 900", "ACQ c2-0-0 f0 5000 6",
                "CS c2-0-0 f0 5100 refused", "END c2-0-0 f0 5200", "LOST - chaos:f0 5050") + "\n");
        Verdict verdict = check("FAULT cut-client c2 950\nHEAL cut-client c2 4990\n",
                Map.of("f0", List.of("c1-0-0")), true,
                "INV c1-0-0 f0 3900", "ACQ c1-0-0 f0 4000 7", "CS c1-0-0 f0 6000 ok 1", "END c1-0-0 f0 6100");
        assertThat(verdict.overlaps()).isEqualTo(1);
        assertThat(verdict.unexplained()).isZero();
        assertThat(verdict.lossesDetected()).isEqualTo(1);
        assertThat(verdict.lossesReported()).isEqualTo(1); // c2's, not c1's: c1 never lost its lock
        assertThat(verdict.examples()).isEmpty();
    }

    @Test
    void aGrantHeldUpByAPauseThatEndedJustBeforeItIsExplained() throws IOException {
        // c1 asked at 900 and was paused from 1000 to 4999: its grant came out at 5000, its lease long gone
        Files.writeString(dir.resolve("c2.history"), String.join("\n", "INV c2-0-0 u0 4000", "ACQ c2-0-0 u0 5010 -1",
                "CS c2-0-0 u0 5100 ok 1", "END c2-0-0 u0 5200") + "\n");
        Verdict verdict = check("FAULT pause-client c1 1000\nHEAL pause-client c1 4999\n",
                Map.of("u0", List.of("c1-0-0")), false,
                "INV c1-0-0 u0 900", "ACQ c1-0-0 u0 5000 -1", "LOST - chaos:u0 5001", "CS c1-0-0 u0 6000 ok 2",
                "END c1-0-0 u0 6100");
        assertThat(verdict.overlaps()).isEqualTo(1);
        assertThat(verdict.unexplained()).isZero();
        assertThat(verdict.lossesReported()).isEqualTo(verdict.lossesDetected()).isEqualTo(1);
    }

    @Test
    void aHolderPausedWhileItHeldIsTheLoserEvenWhenTheOtherClientWasCutOffWhileItWaited() throws IOException {
        // c1 holds u0 from 1000 and is paused 2000-9000; c2 asked at 1500 during its own cut (1200-3000), got it at 5000
        Files.writeString(dir.resolve("c2.history"), String.join("\n", "INV c2-0-0 u0 1500", "ACQ c2-0-0 u0 5000 -1",
                "CS c2-0-0 u0 5100 ok 1", "END c2-0-0 u0 5200") + "\n");
        Verdict verdict = check("FAULT cut-client c2 1200\nFAULT pause-client c1 2000\nHEAL cut-client c2 3000\n"
                + "HEAL pause-client c1 9000\n", Map.of("u0", List.of("c1-0-0")), false,
                "INV c1-0-0 u0 900", "ACQ c1-0-0 u0 1000 -1", "CS c1-0-0 u0 9100 ok 2", "END c1-0-0 u0 9200",
                "LOST - chaos:u0 9150");
        assertThat(verdict.lossesDetected()).isEqualTo(1);
        assertThat(verdict.lossesReported()).isEqualTo(1); // c1's own report: c2 never lost anything
    }

    @Test
    void aDoubleGrantBetweenTwoHealthyClientsIsNotHiddenByAPausedThirdHolder() throws IOException {
        // c1 holds u0 from 1000 and is paused 1500-9000 (explained); c2 and c3, never stalled, both hold it from 5000
        Files.writeString(dir.resolve("c2.history"), String.join("\n", "ACQ c2-0-0 u0 5000 -1",
                "CS c2-0-0 u0 6000 ok 1") + "\n");
        Files.writeString(dir.resolve("c3.history"), String.join("\n", "ACQ c3-0-0 u0 5500 -1",
                "CS c3-0-0 u0 6500 ok 2") + "\n");
        Verdict verdict = check("FAULT pause-client c1 1500\nHEAL pause-client c1 9000\n", Map.of("u0", List.of()),
                false, "ACQ c1-0-0 u0 1000 -1", "CS c1-0-0 u0 9100 ok 3", "LOST - chaos:u0 9150");
        assertThat(verdict.unexplained()).isEqualTo(1);
        assertThat(verdict.examples()).anyMatch(text -> text.startsWith("unexplained overlap: c2-0-0"));
    }

    @Test
    void aStallLongOverBeforeTheGrantExplainsNothing() throws IOException {
        // c2 was paused from 1 s to 4 s while it waited, and granted at 10 s: two leases after; c1 was never stalled
        Files.writeString(dir.resolve("c2.history"), String.join("\n", "INV c2-0-0 u0 900000",
                "ACQ c2-0-0 u0 10000000 -1", "CS c2-0-0 u0 10100000 ok 1") + "\n");
        Verdict verdict = check("FAULT pause-client c2 1000000\nHEAL pause-client c2 4000000\n",
                Map.of("u0", List.of()), false, "ACQ c1-0-0 u0 9000000 -1", "CS c1-0-0 u0 11000000 ok 2",
                "LOST - chaos:u0 11050000");
        assertThat(verdict.unexplained()).isEqualTo(1);
    }

    @Test
    void aReportedLossCountsAndAnOverlapWithoutAFaultIsUnexplained() throws IOException {
        Verdict verdict = check("", Map.of("u0", List.of("c1-0-0", "c1-1-0")), false,
                "ACQ c1-0-0 u0 1000 -1", "ACQ c1-1-0 u0 5000 -1", "CS c1-1-0 u0 5100 ok 1",
                "CS c1-0-0 u0 9000 ok 2", "END c1-0-0 u0 9100", "LOST - chaos:u0 9050");
        assertThat(verdict.unexplained()).isEqualTo(1);
        assertThat(verdict.lossesReported()).isEqualTo(1);
        assertThat(verdict.recoveryMs()).isZero(); // no heal recorded: nothing to measure
    }

    @Test
    void aStaleWriteAcceptedATokenGrantedTwiceAndAPhantomAreFound() throws IOException {
        Verdict verdict = check("", Map.of("f0", List.of("c1-0-0", "c1-1-0", "nobody")), true,
                "ACQ c1-0-0 f0 1000 7", "CS c1-0-0 f0 1100 ok 1", "ACQ c1-1-0 f0 2000 7", "CS c1-1-0 f0 2100 ok 2",
                "ACQ c1-2-0 f0 3000 6", "CS c1-2-0 f0 3100 ok 3");
        assertThat(verdict.staleAccepted()).isEqualTo(2); // token 7 after 7, token 6 after 7
        assertThat(verdict.duplicateTokens()).isEqualTo(1);
        assertThat(verdict.phantoms()).isEqualTo(1);
        assertThat(verdict.lostUpdates()).isEqualTo(1); // c1-2-0 acknowledged, not in the set
    }

    @Test
    void aRefusedFencedWriteIsALossAndAKeyNeverGrantedAfterTheHealFailsRecovery() throws IOException {
        Verdict verdict = check("HEALED 5000\n", Map.of("f0", List.of()), true,
                "ACQ c1-0-0 f0 1000 7", "CS c1-0-0 f0 1100 refused", "END c1-0-0 f0 1200");
        assertThat(verdict.lossesDetected()).isEqualTo(1);
        assertThat(verdict.recoveryMs()).isEqualTo(-1);
    }

    @Test
    void aLossIsNotExpectedFromAClientKilledRightAfterTheSection() throws IOException {
        Verdict verdict = check("KILLED c1 1500\n", Map.of("f0", List.of()), true,
                "ACQ c1-0-0 f0 1000 7", "CS c1-0-0 f0 1100 refused");
        assertThat(verdict.lossesDetected()).isZero();
    }

    @Test
    void aKilledClientsOpenOperationEndsAtItsKillAndReportsNothing() throws IOException {
        Verdict verdict = check("KILLED c1 3000\n", Map.of("u0", List.of("c1-1-0")), false,
                "ACQ c1-0-0 u0 1000 -1", "ACQ c1-1-0 u0 4000 -1", "CS c1-1-0 u0 4100 ok 1");
        assertThat(verdict.overlaps()).isZero();
        assertThat(verdict.lossesDetected()).isZero();
    }
}
