package io.github.distlock.it;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;

/** A bare Boot application: auto-configuration only; each test imports the beans it needs. */
@SpringBootConfiguration
@EnableAutoConfiguration
public class LockTestApplication {
}
