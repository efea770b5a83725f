package io.github.distlock.idempotency;

/**
 * The key was used before for a different request: the stored mark's fingerprint ({@link Idempotent#fingerprint()},
 * {@link IdempotencyOptions#fingerprint()}) differs from this call's. The code did not run. An HTTP API answers it with
 * 422 (the IETF draft "The Idempotency-Key HTTP Header Field").
 */
public class IdempotencyKeyReusedException extends IdempotencyException {

    public IdempotencyKeyReusedException(String key) {
        super(key, "Idempotency key '" + key + "' was used before for a different request (its fingerprint differs); "
                + "use a new key for a new request", null);
    }
}
