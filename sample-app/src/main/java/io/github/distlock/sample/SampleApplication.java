package io.github.distlock.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A flash-sale shop on distlock: one order per user and product, and stock that never oversells, across any number
 * of instances sharing one Redis and one database.
 */
@SpringBootApplication
public class SampleApplication {

    /** Starts the shop; see the README for the options. */
    public static void main(String[] args) {
        SpringApplication.run(SampleApplication.class, args);
    }
}
