package io.github.distlock.idempotency;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.core.ResolvableType;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;
import tools.jackson.databind.type.TypeFactory;

/**
 * A call's outcome as a mark, and a mark back as the outcome a duplicate gets: the mark's JSON (outcome, fingerprint,
 * declared type, value), written through the application's {@link JsonMapper} and read back as the declared result
 * type. A result that would not replay as itself is found when it is written, not when a duplicate comes.
 */
final class ResultReplay {

    /** The template's category: these are the template's messages, whichever class writes them. */
    private static final Log logger = LogFactory.getLog(IdempotencyTemplate.class);

    private static final String RETURNED = "RETURNED";
    private static final String FAILED = "FAILED";

    private final JsonMapper json;

    ResultReplay(JsonMapper json) {
        this.json = json;
    }

    /** The mark of a call that failed with {@code failure}, which its options declare final. */
    String failedMark(String fingerprint, Throwable failure) {
        ObjectNode mark = mark(FAILED, fingerprint);
        mark.put("failure", failure.getClass().getName());
        mark.put("message", String.valueOf(failure.getMessage()));
        return json.writeValueAsString(mark);
    }

    /**
     * The mark of a call that returned {@code result}: its value, or, when it would not replay as itself, why
     * duplicates get {@link DuplicateRequestException} instead.
     */
    String returnedMark(String key, String fingerprint, JavaType type, Object result) {
        ObjectNode mark = mark(RETURNED, fingerprint);
        mark.put("type", (type != null) ? type.toCanonical() : "void");
        if (type != null) {
            try {
                JsonNode value = json.valueToTree(result);
                // read back now, not when a duplicate comes: a result that can't be replayed — or that reads back as
                // something else (a Long in a Number or a Map<String, Object> comes back as an Integer) — is known
                // at once
                if (result != null) {
                    // through the text, as a duplicate reads it: the tree alone keeps a LongNode that the text loses
                    Object back = json.treeToValue(json.readTree(json.writeValueAsString(value)), type);
                    if (!json.valueToTree(back).equals(value) || !sameTypes(result, back)) {
                        throw new IllegalArgumentException("it reads back as " + back + " ("
                                + ((back != null) ? back.getClass().getName() : "null") + "), not as what was returned");
                    }
                }
                mark.set("value", (value != null) ? value : json.nullNode());
            }
            catch (JacksonException | IllegalArgumentException ex) {
                logger.warn("Result of idempotent call '" + key + "' cannot be stored as " + type + " through JSON ("
                        + ex.getMessage() + "); duplicates get DuplicateRequestException instead of it");
                mark.put("unreplayable", "its result (" + result.getClass().getName() + ") cannot be stored as "
                        + type.toCanonical() + " through JSON");
            }
        }
        return json.writeValueAsString(mark);
    }

    /**
     * Whether {@code back} has the classes {@code result} has, element by element for lists and map values: JSON keeps
     * a number's value but not its class, and an {@code equals} on the replay would fail ({@code 7L} vs {@code 7}).
     */
    private static boolean sameTypes(Object result, Object back) {
        if (result == null || back == null) {
            return result == back;
        }
        if (result instanceof Number && result.getClass() != back.getClass()) {
            return false;
        }
        if (result instanceof java.util.Map<?, ?> map && back instanceof java.util.Map<?, ?> other) {
            for (java.util.Map.Entry<?, ?> entry : map.entrySet()) {
                if (!sameTypes(entry.getValue(), other.get(entry.getKey()))) {
                    return false;
                }
            }
        }
        if (result instanceof java.util.List<?> list && back instanceof java.util.List<?> other
                && list.size() == other.size()) {
            for (int i = 0; i < list.size(); i++) {
                if (!sameTypes(list.get(i), other.get(i))) {
                    return false;
                }
            }
        }
        return true;
    }

    private ObjectNode mark(String outcome, String fingerprint) {
        ObjectNode mark = json.createObjectNode();
        mark.put("outcome", outcome);
        if (fingerprint != null) {
            mark.put("fingerprint", fingerprint);
        }
        return mark;
    }

    /** The outcome a mark stands for: the first call's result, or the exception a duplicate gets instead. */
    @SuppressWarnings("unchecked")
    <T> T replay(String key, String text, String fingerprint, JavaType type) {
        JsonNode mark;
        try {
            mark = json.readTree(text);
        }
        catch (JacksonException ex) {
            throw new DuplicateRequestException(key, "A call with idempotency key '" + key + "' was processed, but "
                    + "its mark cannot be read", null, ex);
        }
        String stored = mark.hasNonNull("fingerprint") ? mark.get("fingerprint").asString() : null;
        if (fingerprint != null && stored != null && !fingerprint.equals(stored)) {
            throw new IdempotencyKeyReusedException(key);
        }
        if (FAILED.equals(mark.path("outcome").asString(""))) {
            String failure = mark.path("failure").asString("");
            throw new DuplicateRequestException(key, "A call with idempotency key '" + key + "' was processed and "
                    + "failed with " + failure + ": " + mark.path("message").asString(""), failure, null);
        }
        String storedType = mark.path("type").asString("");
        String wanted = (type != null) ? type.toCanonical() : "void";
        if (RETURNED.equals(mark.path("outcome").asString("")) && !storedType.isEmpty() && !storedType.equals(wanted)) {
            // one key used by calls of different kinds: replaying one's result as the other's would make one up
            throw new DuplicateRequestException(key, "A call with idempotency key '" + key + "' was processed by a "
                    + "call returning " + storedType + "; this one returns " + wanted + ", so its result is not "
                    + "replayed. Use distinct keys for different operations", null, null);
        }
        if (mark.hasNonNull("unreplayable")) {
            throw new DuplicateRequestException(key, "A call with idempotency key '" + key + "' was processed, but "
                    + mark.get("unreplayable").asString(), null, null);
        }
        if (type == null || !mark.has("value")) {
            return null;
        }
        try {
            return (T) json.treeToValue(mark.get("value"), type);
        }
        catch (JacksonException ex) {
            throw new DuplicateRequestException(key, "A call with idempotency key '" + key + "' was processed, but "
                    + "its stored result cannot be read as " + type.toCanonical(), null, ex);
        }
    }

    /** Jackson's type for {@code type}, generics resolved as Spring resolved them; {@code null} for no result. */
    JavaType javaType(ResolvableType type) {
        Class<?> raw = (type != null) ? type.resolve() : null;
        if (raw == null || raw == void.class || raw == Void.class) {
            return null;
        }
        return javaType(json.getTypeFactory(), type);
    }

    static JavaType javaType(TypeFactory types, ResolvableType type) {
        if (type.isArray()) {
            return types.constructArrayType(javaType(types, type.getComponentType()));
        }
        Class<?> raw = type.resolve(Object.class);
        ResolvableType[] generics = type.getGenerics();
        if (generics.length == 0) {
            return types.constructType(raw);
        }
        JavaType[] parameters = new JavaType[generics.length];
        for (int i = 0; i < generics.length; i++) {
            parameters[i] = javaType(types, generics[i]);
        }
        return types.constructParametricType(raw, parameters);
    }
}
