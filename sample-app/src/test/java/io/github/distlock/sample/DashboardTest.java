package io.github.distlock.sample;

import java.time.Duration;

import org.htmlunit.BrowserVersion;
import org.htmlunit.WebClient;
import org.htmlunit.html.DomElement;
import org.htmlunit.html.HtmlPage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The dashboard at {@code /} in a headless browser engine (HtmlUnit, runs the page's JavaScript): a person presses
 * "Both, side by side" and sees the locked sale sell exactly the stock and the unsafe one oversell, the sale products
 * in the product list, and no lock left held.
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

        page.getHtmlElementById("run-both").click();
        await().atMost(Duration.ofSeconds(90)).until(() ->
                settle(page).getElementById("sale-unsafe").hasAttribute("data-oversold"));

        DomElement locked = page.getElementById("sale-locked");
        DomElement unsafe = page.getElementById("sale-unsafe");
        // what a person reads: with locks, exactly the 5 items were sold and the other 25 buyers were refused
        assertThat(locked.asNormalizedText()).contains("no overselling").contains("orders placed\t5")
                .contains("items sold\t5").contains("stock shown after\t0").contains("oversold\t0");
        // without locks, buyers who all saw the same stock got orders for items the shop never had
        assertThat(Integer.parseInt(unsafe.getAttribute("data-oversold"))).isPositive();
        assertThat(unsafe.asNormalizedText()).contains("oversold by");
        assertThat(Integer.parseInt(unsafe.getAttribute("data-placed"))).isGreaterThan(5);
        // the product list, refreshed after each sale, shows both sale products
        await().atMost(Duration.ofSeconds(20)).until(() ->
                settle(page).getElementById("products").asNormalizedText().contains("(unsafe)"));
        assertThat(page.getElementById("products").asNormalizedText()).containsPattern("\\(locked\\)\t0\t5");
        // and nothing is held once the sales are over
        await().atMost(Duration.ofSeconds(20)).until(() -> settle(page).getElementById("no-locks") != null);
    }

    /** Lets the page's pending requests and timers run a little; returns the page. */
    private static HtmlPage settle(HtmlPage page) {
        browser.waitForBackgroundJavaScript(200);
        return page;
    }
}
