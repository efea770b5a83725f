package io.github.distlock.generated;

import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;

/** The palette, the nesting chain and the transactional caller; the same in both application contexts. */
@TestConfiguration(proxyBeanMethods = false)
public class PaletteConfig {

    @Bean
    Palette palette() {
        return new Palette();
    }

    @Bean
    Nesting.Inner inner() {
        return new Nesting.Inner();
    }

    @Bean
    Nesting.Middle middle(Nesting.Inner inner) {
        return new Nesting.Middle(inner);
    }

    @Bean
    Nesting.Outer outer(Nesting.Middle middle) {
        return new Nesting.Outer(middle);
    }

    @Bean
    Ledger ledger(JdbcTemplate jdbc) {
        jdbc.execute("CREATE TABLE IF NOT EXISTS ledger (k VARCHAR(100) NOT NULL)");
        return new Ledger(jdbc);
    }
}
