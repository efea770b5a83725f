package io.github.distlock.autoconfigure;

import java.util.Map;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/** {@link ConditionalOnDistlockBackend}. */
class OnDistlockBackendCondition extends SpringBootCondition {

    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        Map<String, Object> attributes = metadata.getAnnotationAttributes(ConditionalOnDistlockBackend.class.getName());
        String backend = (String) attributes.get("value");
        // read as text, as DistlockProperties binds it: a name no backend has is reported by the startup checks
        String chosen = context.getEnvironment().getProperty("distlock.backend");
        if (chosen == null || chosen.isBlank()) {
            return ConditionOutcome.match("distlock.backend is not set: " + backend + " is a candidate");
        }
        if (DistlockBackend.sameName(chosen, backend)) {
            return ConditionOutcome.match("distlock.backend=" + chosen);
        }
        return ConditionOutcome.noMatch("distlock.backend=" + chosen + " chooses another backend than " + backend);
    }
}
