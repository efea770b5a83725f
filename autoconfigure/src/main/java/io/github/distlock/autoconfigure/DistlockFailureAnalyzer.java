package io.github.distlock.autoconfigure;

import io.github.distlock.DistlockConfigurationException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns distlock's startup failures into Spring Boot's "APPLICATION FAILED TO START" report, with a Description that
 * names the method or property and an Action that says what to change, instead of a chain of bean creation errors.
 */
class DistlockFailureAnalyzer extends AbstractFailureAnalyzer<DistlockConfigurationException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, DistlockConfigurationException cause) {
        return new FailureAnalysis(cause.getDescription(), cause.getAction(), cause);
    }
}
