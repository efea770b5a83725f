package io.github.distlock.autoconfigure;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.context.annotation.Conditional;

/**
 * Matches when {@code distlock.backend} is not set (every configured backend is then a candidate) or names this
 * backend. Guards the {@link DistlockBackend} bean of a backend's auto-configuration.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Conditional(OnDistlockBackendCondition.class)
public @interface ConditionalOnDistlockBackend {

    /** The backend's name, as {@code distlock.backend} spells it: {@code redis}, {@code jdbc}, ... */
    String value();
}
