package io.github.distlock.idempotency;

import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.temporal.TemporalAccessor;
import java.time.temporal.TemporalAmount;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Date;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The fingerprint of a request: the SHA-256 of a canonical encoding of its value, so that two requests are one
 * fingerprint exactly when their content is equal, however it prints or iterates.
 *
 * <ul>
 * <li>records by their class and components, other objects by their class and instance fields (not static, not
 * transient, those of superclasses included), fields sorted by name: a field that {@code toString()} leaves out
 * still counts, and a refund is not a charge with the same fields;
 * <li>maps by their entries sorted by the key's encoding (two maps with the same entries match, whatever their
 * order), sets likewise by element; lists and arrays in order ({@code int[] {1, 2}} matches {@code List.of(1, 2)});
 * <li>the JDK's numbers by value ({@code 7}, {@code 7L}, {@code 7.0} and {@code new BigDecimal("7.00")} are one
 * number), encoded as the unscaled value and scale of their canonical decimal, never written out (a huge exponent
 * costs nothing); a {@code Number} class of the application is an object: its class and fields;
 * <li>strings, booleans, enums (class and name), {@code java.time} values, dates (their instant), UUIDs and other
 * value types of the JDK by their text; {@code null} as itself; {@link Optional} as its value; a Jackson
 * {@link JsonNode} as the values it holds.
 * </ul>
 * Refused with {@link IllegalArgumentException} naming the fingerprint: a value that refers to itself (a cycle), an
 * object with no content to compare (no fields, or a JDK type that is not a value, such as a stream or a thread):
 * two such requests could only be told apart by identity, and a number whose exponent is out of range. A
 * {@code String} fingerprint is the SHA-256 of its UTF-8 text; a value's encoding starts with a byte UTF-8 never
 * contains, so no text's fingerprint is a value's.
 */
final class RequestFingerprint {

    /** The first byte of a value's encoding: 0xFF is never part of UTF-8, so no text starts with it. */
    private static final byte VALUE_ENCODING = (byte) 0xFF;

    private RequestFingerprint() {
    }

    /** The fingerprint of {@code value}, or {@code null} for none. */
    static String of(Object value, JsonMapper json) {
        if (value == null) {
            return null;
        }
        byte[] bytes;
        if (value instanceof String text) {
            bytes = text.getBytes(StandardCharsets.UTF_8);
        }
        else {
            StringBuilder out = new StringBuilder();
            encode(value, out, json, Collections.newSetFromMap(new IdentityHashMap<>()), "fingerprint");
            byte[] encoded = out.toString().getBytes(StandardCharsets.UTF_8);
            // led by a byte UTF-8 never contains: no text's bytes (a String fingerprint) can equal a value's encoding
            bytes = new byte[encoded.length + 1];
            bytes[0] = VALUE_ENCODING;
            System.arraycopy(encoded, 0, bytes, 1, encoded.length);
        }
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        }
        catch (NoSuchAlgorithmException ex) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", ex);
        }
    }

    /**
     * Why values declared as {@code type} can never be fingerprinted, or {@code null} when they can (or may: an
     * interface or abstract class is checked at the call, on the actual value).
     */
    static String unfingerprintable(Class<?> type) {
        if (type.isPrimitive() || type.isArray() || type.isInterface() || Modifier.isAbstract(type.getModifiers())
                || type == Object.class || isValue(type) || type.isEnum() || type.isRecord()
                || Collection.class.isAssignableFrom(type) || Map.class.isAssignableFrom(type)
                || JsonNode.class.isAssignableFrom(type) || type == Optional.class) {
            return null;
        }
        if (isJdk(type)) {
            return type.getName() + " is not a value (no content distlock can compare, only its identity)";
        }
        if (fields(type).isEmpty()) {
            return type.getName() + " has no instance fields: two requests of it differ only by identity";
        }
        return null;
    }

    private static void encode(Object value, StringBuilder out, JsonMapper json, Set<Object> path, String where) {
        if (value == null) {
            out.append('n');
            return;
        }
        if (value instanceof CharSequence || value instanceof Character) {
            String text = value.toString();
            out.append("s").append(text.length()).append(':').append(text);
            return;
        }
        if (value instanceof Boolean flag) {
            out.append(flag ? "T" : "F");
            return;
        }
        if (value instanceof Number number && isJdk(number.getClass())) {
            out.append(number(number, where));
            return;
        }
        if (value instanceof Enum<?> constant) {
            String text = constant.getDeclaringClass().getName() + "." + constant.name();
            out.append('e').append(text.length()).append(':').append(text);
            return;
        }
        if (value instanceof Date date) {
            out.append('t').append(date.getTime()).append(';');
            return;
        }
        if (isValue(value.getClass())) {
            String text = value.getClass().getName() + "=" + value;
            out.append('v').append(text.length()).append(':').append(text);
            return;
        }
        if (value instanceof Optional<?> optional) {
            encode(optional.orElse(null), out, json, path, where);
            return;
        }
        if (value instanceof JsonNode node) {
            encode(json.treeToValue(node, Object.class), out, json, path, where);
            return;
        }
        if (!path.add(value)) {
            throw new IllegalArgumentException(where + " refers to itself (a " + value.getClass().getName()
                    + " inside itself), so it has no finite fingerprint");
        }
        try {
            if (value instanceof Map<?, ?> map) {
                List<String> entries = new ArrayList<>(map.size());
                for (Map.Entry<?, ?> entry : map.entrySet()) {
                    StringBuilder one = new StringBuilder();
                    encode(entry.getKey(), one, json, path, where + " key");
                    one.append('=');
                    encode(entry.getValue(), one, json, path, where + "[" + entry.getKey() + "]");
                    entries.add(one.toString());
                }
                Collections.sort(entries);
                appendAll('m', entries, out);
            }
            else if (value instanceof Set<?> set) {
                List<String> elements = new ArrayList<>(set.size());
                for (Object element : set) {
                    StringBuilder one = new StringBuilder();
                    encode(element, one, json, path, where + " element");
                    elements.add(one.toString());
                }
                Collections.sort(elements);
                appendAll('S', elements, out);
            }
            else if (value instanceof Collection<?> collection) {
                List<String> elements = new ArrayList<>(collection.size());
                int index = 0;
                for (Object element : collection) {
                    StringBuilder one = new StringBuilder();
                    encode(element, one, json, path, where + "[" + index++ + "]");
                    elements.add(one.toString());
                }
                appendAll('l', elements, out);
            }
            else if (value.getClass().isArray()) {
                if (value instanceof byte[] bytes) {
                    out.append('b').append(HexFormat.of().formatHex(bytes)).append(';');
                    return;
                }
                List<String> elements = new ArrayList<>();
                for (int i = 0; i < Array.getLength(value); i++) {
                    StringBuilder one = new StringBuilder();
                    encode(Array.get(value, i), one, json, path, where + "[" + i + "]");
                    elements.add(one.toString());
                }
                appendAll('l', elements, out);
            }
            else {
                encodeObject(value, out, json, path, where);
            }
        }
        finally {
            path.remove(value);
        }
    }

    private static void encodeObject(Object value, StringBuilder out, JsonMapper json, Set<Object> path,
            String where) {
        Class<?> type = value.getClass();
        String problem = unfingerprintable(type);
        if (problem != null) {
            throw new IllegalArgumentException(where + " cannot be fingerprinted: " + problem);
        }
        List<String> entries = new ArrayList<>();
        if (type.isRecord()) {
            for (RecordComponent component : type.getRecordComponents()) {
                Object field;
                try {
                    component.getAccessor().setAccessible(true);
                    field = component.getAccessor().invoke(value);
                }
                catch (ReflectiveOperationException | RuntimeException ex) {
                    throw new IllegalArgumentException(where + "." + component.getName() + " cannot be read: " + ex, ex);
                }
                entries.add(named(component.getName(), field, json, path, where));
            }
        }
        else {
            for (Field field : fields(type)) {
                Object content;
                try {
                    field.setAccessible(true);
                    content = field.get(value);
                }
                catch (ReflectiveOperationException | RuntimeException ex) {
                    throw new IllegalArgumentException(where + "." + field.getName() + " of " + type.getName()
                            + " cannot be read, so it cannot be fingerprinted: " + ex, ex);
                }
                entries.add(named(field.getName(), content, json, path, where));
            }
        }
        Collections.sort(entries);
        // the type is content: a refund is not a charge with the same fields
        String name = type.getName();
        out.append('o').append(name.length()).append(':').append(name);
        appendAll('o', entries, out);
    }

    private static String named(String name, Object value, JsonMapper json, Set<Object> path, String where) {
        StringBuilder one = new StringBuilder();
        one.append(name.length()).append(':').append(name).append('=');
        encode(value, one, json, path, where + "." + name);
        return one.toString();
    }

    private static void appendAll(char kind, List<String> parts, StringBuilder out) {
        out.append(kind).append(parts.size()).append('[');
        for (String part : parts) {
            // length-prefixed: no content can end a part early and start the next
            out.append(part.length()).append(':').append(part);
        }
        out.append(']');
    }

    /**
     * A number of the JDK by value: the same for 7, 7L, 7.0f and 7.00. As the unscaled value and scale of its
     * canonical decimal, never its digits written out: {@code 1E+300000000} is 11 characters of JSON, and must not
     * become 300 million digits.
     */
    private static String number(Number number, String where) {
        BigDecimal decimal;
        if (number instanceof BigDecimal big) {
            decimal = big;
        }
        else if (number instanceof BigInteger big) {
            decimal = new BigDecimal(big);
        }
        else if (number instanceof Double || number instanceof Float
                || number instanceof java.util.concurrent.atomic.DoubleAdder
                || number instanceof java.util.concurrent.atomic.DoubleAccumulator) {
            double d = number.doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                return "x" + d + ";";
            }
            // a float by its own shortest text (7.1f is 7.1, not 7.099999904632568)
            decimal = new BigDecimal((number instanceof Float) ? number.toString() : Double.toString(d));
        }
        else if (number instanceof Long || number instanceof Integer || number instanceof Short
                || number instanceof Byte || number instanceof AtomicInteger || number instanceof AtomicLong
                || number instanceof java.util.concurrent.atomic.LongAdder
                || number instanceof java.util.concurrent.atomic.LongAccumulator) {
            decimal = BigDecimal.valueOf(number.longValue());
        }
        else {
            try {
                decimal = new BigDecimal(number.toString());
            }
            catch (NumberFormatException ex) {
                throw new IllegalArgumentException(where + " cannot be fingerprinted: " + number.getClass().getName()
                        + " is a number whose text '" + number + "' is not a number", ex);
            }
        }
        if (decimal.signum() == 0) {
            return "d0e0;";
        }
        try {
            decimal = decimal.stripTrailingZeros();
        }
        catch (ArithmeticException ex) {
            throw new IllegalArgumentException(where + " cannot be fingerprinted: the exponent of " + decimal
                    + " is out of range (" + ex.getMessage() + ")", ex);
        }
        return "d" + decimal.unscaledValue() + "e" + decimal.scale() + ";";
    }

    /** JDK value types whose text is their content. */
    private static boolean isValue(Class<?> type) {
        return TemporalAccessor.class.isAssignableFrom(type) || TemporalAmount.class.isAssignableFrom(type)
                || type == java.util.UUID.class || type == java.net.URI.class || type == java.util.Currency.class
                || type == java.util.Locale.class || type == Class.class || java.time.ZoneId.class.isAssignableFrom(type)
                || java.nio.file.Path.class.isAssignableFrom(type);
    }

    private static boolean isJdk(Class<?> type) {
        String name = type.getName();
        return name.startsWith("java.") || name.startsWith("javax.") || name.startsWith("jdk.")
                || name.startsWith("sun.");
    }

    /** Instance fields that are content: not static, not transient, not synthetic, superclasses' included. */
    private static List<Field> fields(Class<?> type) {
        List<Field> fields = new ArrayList<>();
        for (Class<?> current = type; current != null && current != Object.class; current = current.getSuperclass()) {
            for (Field field : current.getDeclaredFields()) {
                int modifiers = field.getModifiers();
                if (!Modifier.isStatic(modifiers) && !Modifier.isTransient(modifiers) && !field.isSynthetic()) {
                    fields.add(field);
                }
            }
        }
        return fields;
    }
}
