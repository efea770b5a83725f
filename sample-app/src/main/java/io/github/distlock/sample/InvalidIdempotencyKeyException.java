package io.github.distlock.sample;

/** An {@code Idempotency-Key} header that is not a non-empty string of at most 255 visible ASCII characters. */
public class InvalidIdempotencyKeyException extends RuntimeException {

    public InvalidIdempotencyKeyException(String message) {
        super(message);
    }

    /**
     * The key of a header value: a Structured Field string ({@code "8e03978e-..."}, as the draft writes it) or, as
     * many clients send it, the bare text.
     *
     * @throws InvalidIdempotencyKeyException when it is empty, too long or not visible ASCII
     */
    static String parse(String header) {
        String key = header.strip();
        if (key.length() >= 2 && key.startsWith("\"") && key.endsWith("\"")) {
            key = key.substring(1, key.length() - 1);
        }
        if (key.isEmpty()) {
            throw new InvalidIdempotencyKeyException("must not be empty");
        }
        if (key.length() > 255) {
            throw new InvalidIdempotencyKeyException("must be at most 255 characters");
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            // braces would open a Redis hash tag inside the lock key the mark is taken under
            if (c < 0x21 || c > 0x7e || c == '"' || c == '\\' || c == '{' || c == '}') {
                throw new InvalidIdempotencyKeyException("must be visible ASCII characters without quotes, "
                        + "backslashes or braces (a UUID, say)");
            }
        }
        return key;
    }
}
