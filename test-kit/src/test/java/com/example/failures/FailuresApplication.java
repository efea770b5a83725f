package com.example.failures;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** A user's application whose failure handling its tests take through lost leases, outages and a slow backend. */
@SpringBootApplication
public class FailuresApplication {
}
