package io.github.distlock.sample;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.htmlunit.BrowserVersion;
import org.htmlunit.WebClient;
import org.htmlunit.html.DomElement;
import org.htmlunit.html.HtmlPage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The dashboard at {@code /} in a headless browser engine (HtmlUnit, runs the page's JavaScript): a person presses
 * "Both, side by side" and sees the locked sale sell exactly the stock and the unsafe one oversell, the sale products
 * in the product list, no lock left held, and each sale's timeline; and the timeline's data: with locks one buyer
 * in the guarded section at a time while the others queue, without them all of them inside together.
 */
class DashboardTest {

    static InProcessApp app;
    static WebClient browser;

    @BeforeAll
    static void start() {
        app = InProcessApp.start();
        browser = new WebClient(BrowserVersion.FIREFOX);
        browser.getOptions().setCssEnabled(false);
        browser.getOptions().setThrowExceptionOnScriptError(true);
    }

    @AfterAll
    static void stop() {
        if (browser != null) {
            browser.close();
        }
        if (app != null) {
            app.close();
        }
    }

    @Test
    void theFlashSaleSideBySideShowsTheLockedShopSellingItsStockAndTheUnsafeOneOverselling() throws Exception {
        HtmlPage page = browser.getPage(app.baseUrl() + "/");
        assertThat(page.getTitleText()).isEqualTo("distlock flash-sale shop");
        await().atMost(Duration.ofSeconds(20)).until(() -> settle(page).getElementById("no-locks") != null);
        // the page opens with the latest sales of this app, if any: wait for them, then for the sale run here
        await().atMost(Duration.ofSeconds(20))
                .until(() -> settle(page).getElementById("sales").hasAttribute("data-loaded"));
        String before = page.getElementById("sale-unsafe").getAttribute("data-product");

        page.getHtmlElementById("run-both").click();
        await().atMost(Duration.ofSeconds(90)).until(() -> {
            DomElement sale = settle(page).getElementById("sale-unsafe");
            return sale.hasAttribute("data-product") && !sale.getAttribute("data-product").equals(before);
        });

        DomElement locked = page.getElementById("sale-locked");
        DomElement unsafe = page.getElementById("sale-unsafe");
        // what a person reads: with locks, exactly the 5 items were sold and the other 25 buyers were refused
        assertThat(locked.asNormalizedText()).contains("no overselling").contains("orders placed\t5")
                .contains("items sold\t5").contains("stock shown after\t0").contains("oversold\t0");
        // without locks, buyers who all saw the same stock got orders for items the shop never had
        assertThat(Integer.parseInt(unsafe.getAttribute("data-oversold"))).isPositive();
        assertThat(unsafe.asNormalizedText()).contains("oversold by");
        assertThat(Integer.parseInt(unsafe.getAttribute("data-placed"))).isGreaterThan(5);
        // each sale's timeline: with locks the five buyers who got an item, each alone in the guarded section, and
        // the queue for the product lock; without, buyers inside together
        assertThat(page.querySelectorAll("#timeline-locked rect.section")).hasSize(5);
        assertThat(page.querySelectorAll("#timeline-locked rect.together")).isEmpty();
        assertThat(page.querySelectorAll("#timeline-locked path.queue")).hasSize(1);
        assertThat(page.querySelectorAll("#timeline-unsafe rect.together")).isNotEmpty();
        // the product list, refreshed after each sale, shows both sale products
        await().atMost(Duration.ofSeconds(20)).until(() ->
                settle(page).getElementById("products").asNormalizedText().contains("(unsafe)"));
        assertThat(page.getElementById("products").asNormalizedText()).containsPattern("\\(locked\\)\t0\t5");
        // and nothing is held once the sales are over
        await().atMost(Duration.ofSeconds(20)).until(() -> settle(page).getElementById("no-locks") != null);
    }

    @Test
    void theTimelineShowsTheLockedBuyersInTheSectionOneAfterAnotherAndTheUnsafeOnesAllTogether() {
        int buyers = 8;
        int stock = 3;
        SaleRecorder recorder = app.context().getBean(SaleRecorder.class);
        ShopClient client = new ShopClient();
        for (String mode : List.of("locked", "unsafe")) {
            // The first buyer inside stays there until each other buyer is either inside too or seen queued for the
            // product lock by the recording: with the lock they can only queue, without it they all come in. Neither
            // outcome is left to thread scheduling.
            AtomicInteger entered = new AtomicInteger();
            recorder.whenEntering(productId -> {
                if (entered.incrementAndGet() == 1) {
                    await().atMost(Duration.ofSeconds(20))
                            .until(() -> entered.get() + recorder.queuedAtMost(productId) >= buyers);
                }
            });
            try {
                assertThat(client.post(app.baseUrl() + "/api/demo/flash-sale?mode=%s&stock=%d&buyers=%d"
                        .formatted(mode, stock, buyers), "").status()).isEqualTo(200);
            }
            finally {
                recorder.whenEntering(null);
            }
        }
        // what the dashboard reads when it opens
        JsonNode latest = client.get(app.baseUrl() + "/api/demo/flash-sales").json();

        JsonNode locked = latest.path("locked").path("timeline");
        List<JsonNode> inLock = sections(locked);
        // only the three buyers who got an item entered; the key was closed on the last one, so the five still
        // queued were told "sold out" without entering
        assertThat(inLock).hasSize(stock).allSatisfy(s -> assertThat(s.path("outcome").asString()).isEqualTo("sold"));
        for (int i = 1; i < inLock.size(); i++) {
            assertThat(inLock.get(i).path("enteredMillis").asDouble())
                    .as("buyer %d entered after buyer %d left", i, i - 1)
                    .isGreaterThanOrEqualTo(inLock.get(i - 1).path("leftMillis").asDouble());
        }
        // the third sale closed the key while the last five buyers were still queued, and they were told at once
        JsonNode closed = locked.path("keyClosed");
        assertThat(closed.path("waitersTold").asLong()).isEqualTo(buyers - stock);
        assertThat(closed.path("atMillis").asDouble()).isBetween(inLock.get(stock - 1).path("enteredMillis").asDouble(),
                inLock.get(stock - 1).path("leftMillis").asDouble());
        List<Integer> queue = new ArrayList<>();
        locked.path("queue").forEach(point -> queue.add(point.path("waiting").asInt()));
        assertThat(locked.path("lockKey").asString()).endsWith("product:" + latest.path("locked").path("productId"));
        // every other buyer queued while the first was inside, and nobody was left queued
        assertThat(queue).isNotEmpty().last().isEqualTo(0);
        assertThat(queue.stream().mapToInt(Integer::intValue).max().orElse(0)).isGreaterThanOrEqualTo(buyers - 1);

        JsonNode unsafe = latest.path("unsafe").path("timeline");
        List<JsonNode> together = sections(unsafe);
        // every buyer read the stock while the first was still inside: all sold, five items the shop never had
        assertThat(together).hasSize(buyers)
                .allSatisfy(s -> assertThat(s.path("outcome").asString()).isEqualTo("sold"));
        double firstLeft = together.get(0).path("leftMillis").asDouble();
        assertThat(together.subList(1, buyers)).allSatisfy(s ->
                assertThat(s.path("enteredMillis").asDouble()).isLessThan(firstLeft));
        assertThat(latest.path("unsafe").path("oversold").asInt()).isEqualTo(buyers - stock);
        assertThat(unsafe.path("lockKey").isNull()).isTrue();
        assertThat(unsafe.path("queue").isEmpty()).isTrue();
        assertThat(unsafe.path("keyClosed").isNull()).isTrue();
    }

    private static List<JsonNode> sections(JsonNode timeline) {
        List<JsonNode> sections = new ArrayList<>();
        timeline.path("sections").forEach(sections::add);
        return sections;
    }

    /** Lets the page's pending requests and timers run a little; returns the page. */
    private static HtmlPage settle(HtmlPage page) {
        browser.waitForBackgroundJavaScript(200);
        return page;
    }
}
