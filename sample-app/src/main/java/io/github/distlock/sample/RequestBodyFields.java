package io.github.distlock.sample;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import jakarta.validation.ConstraintViolation;
import jakarta.validation.Validator;
import org.springframework.core.MethodParameter;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpInputMessage;
import org.springframework.http.converter.HttpMessageConverter;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.servlet.mvc.method.annotation.RequestBodyAdviceAdapter;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DatabindException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.exc.MismatchedInputException;
import tools.jackson.databind.exc.UnrecognizedPropertyException;
import tools.jackson.databind.json.JsonMapper;

/**
 * Names every unreadable or invalid field of a JSON request body, so one 400 tells the client all it must fix.
 *
 * <p>Jackson stops at the first value it cannot convert ({@code "userId": "abc"}), and then bean validation never
 * runs: on its own the answer could name one field at most. So this advice keeps the body of every request read into
 * a record (up to {@value #MAX_KEPT} bytes; bigger bodies pass through unkept), and when reading fails,
 * {@link #errors} converts and validates the fields one by one: a field that cannot be converted is named with the
 * kind of value expected, a readable one with what its constraints say, and a field the record does not have as
 * such. The bodies are read strictly ({@link StrictRequestBodies}), and so are the fields here. The JSON names are
 * assumed to be the record components' names, which holds for this application's requests.
 */
@ControllerAdvice
public class RequestBodyFields extends RequestBodyAdviceAdapter {

    /** Enough for any request this API takes; a bigger one gets the single field Jackson names. */
    static final int MAX_KEPT = 64 * 1024;

    private static final String KEPT = RequestBodyFields.class.getName() + ".kept";

    private final JsonMapper json;
    private final Validator validator;

    RequestBodyFields(StrictRequestBodies.StrictMapper strict, Validator validator) {
        // the mapper that read the body (strict for this API's records), so a field fails here as it failed there
        this.json = strict.mapper();
        this.validator = validator;
    }

    /**
     * Kept bodies are those of this API's request records: the ones read strictly, so that the fields are checked
     * here as they were read.
     */
    @Override
    public boolean supports(MethodParameter parameter, Type targetType,
            Class<? extends HttpMessageConverter<?>> converterType) {
        return targetType instanceof Class<?> type && StrictRequestBodies.TYPES.contains(type);
    }

    @Override
    public HttpInputMessage beforeBodyRead(HttpInputMessage message, MethodParameter parameter, Type targetType,
            Class<? extends HttpMessageConverter<?>> converterType) throws IOException {
        InputStream body = message.getBody();
        byte[] head = body.readNBytes(MAX_KEPT + 1);
        InputStream replay;
        if (head.length <= MAX_KEPT) {
            RequestContextHolder.currentRequestAttributes().setAttribute(KEPT, new Kept(head, (Class<?>) targetType),
                    RequestAttributes.SCOPE_REQUEST);
            replay = new ByteArrayInputStream(head);
        }
        else {
            replay = new SequenceInputStream(new ByteArrayInputStream(head), body);
        }
        return new HttpInputMessage() {
            @Override
            public InputStream getBody() {
                return replay;
            }

            @Override
            public HttpHeaders getHeaders() {
                return message.getHeaders();
            }
        };
    }

    /**
     * The fields of the body that failed to read, each with a message saying what is expected ("must be a whole
     * number, not a string"), and the invalid ones among the rest ("must be greater than 0"); empty when the body is
     * not a JSON object at all (malformed JSON, an array...), which the caller reports as a whole.
     */
    Map<String, String> errors(HttpMessageNotReadableException ex, RequestAttributes request) {
        if (request.getAttribute(KEPT, RequestAttributes.SCOPE_REQUEST) instanceof Kept kept) {
            return errors(kept);
        }
        return errorFromException(ex);
    }

    private Map<String, String> errors(Kept kept) {
        JsonNode root;
        try {
            root = json.readTree(kept.body());
        }
        catch (JacksonException ex) {
            return Map.of();
        }
        Map<String, String> errors = new TreeMap<>();
        if (root == null || !root.isObject()) {
            return errors;
        }
        Set<String> known = Arrays.stream(kept.type().getRecordComponents()).map(RecordComponent::getName)
                .collect(Collectors.toSet());
        // every field the request does not have: a misspelt "quantty" would otherwise be dropped, and the order placed
        // without what the client meant to say
        root.propertyNames().stream().filter(name -> !known.contains(name))
                .forEach(name -> errors.put(name, "is not a field of this request"));
        for (RecordComponent component : kept.type().getRecordComponents()) {
            String name = component.getName();
            JsonNode node = root.get(name);
            Object value = null;
            if (node != null && !node.isNull()) {
                try {
                    value = json.treeToValue(node, component.getType());
                }
                catch (JacksonException ex) {
                    errors.put(name, "must be " + expected(component.getType(), node) + ", not " + kind(node));
                    continue;
                }
            }
            firstMessage(validator.validateValue(kept.type(), name, value))
                    .ifPresent(message -> errors.put(name, message));
        }
        return errors;
    }

    /** When the body was not kept: the one field Jackson names, if it names one. */
    private static Map<String, String> errorFromException(HttpMessageNotReadableException ex) {
        if (ex.getCause() instanceof UnrecognizedPropertyException unknown) {
            return Map.of(unknown.getPropertyName(), "is not a field of this request");
        }
        if (ex.getCause() instanceof MismatchedInputException mismatch && mismatch.getTargetType() != null) {
            String path = path(mismatch);
            if (!path.isEmpty()) {
                return Map.of(path, "must be " + expected(mismatch.getTargetType(), null));
            }
        }
        return Map.of();
    }

    private static String path(DatabindException ex) {
        return ex.getPath().stream()
                .map(reference -> reference.getPropertyName() != null ? reference.getPropertyName()
                        : "[" + reference.getIndex() + "]")
                .collect(Collectors.joining(".")).replace(".[", "[");
    }

    /** A stable choice when a field breaks several constraints: the alphabetically first message. */
    private static Optional<String> firstMessage(Set<? extends ConstraintViolation<?>> violations) {
        return violations.stream().map(ConstraintViolation::getMessage).min(Comparator.naturalOrder());
    }

    /** The kind of value a Java type reads from, as a client would put it. */
    private static String expected(Class<?> type, JsonNode given) {
        Class<?> boxed = type.isPrimitive() ? box(type) : type;
        if (boxed == Long.class || boxed == Integer.class || boxed == Short.class || boxed == Byte.class) {
            // a whole number that does not fit: say which range does
            if (given != null && given.isIntegralNumber()) {
                return "a whole number from " + minOf(boxed) + " to " + maxOf(boxed);
            }
            return "a whole number";
        }
        if (boxed == BigInteger.class) {
            return "a whole number";
        }
        if (Number.class.isAssignableFrom(boxed) || boxed == BigDecimal.class) {
            return "a number";
        }
        if (boxed == String.class) {
            return "a string";
        }
        if (boxed == Boolean.class) {
            return "true or false";
        }
        return "a JSON value for " + type.getSimpleName();
    }

    private static String kind(JsonNode node) {
        if (node.isString()) {
            return "a string";
        }
        if (node.isIntegralNumber()) {
            return node.toString();
        }
        if (node.isNumber()) {
            return "a decimal number";
        }
        if (node.isBoolean()) {
            return "a boolean";
        }
        if (node.isArray()) {
            return "an array";
        }
        if (node.isObject()) {
            return "an object";
        }
        return node.getNodeType().name().toLowerCase(java.util.Locale.ROOT);
    }

    private static Class<?> box(Class<?> primitive) {
        return switch (primitive.getName()) {
            case "long" -> Long.class;
            case "int" -> Integer.class;
            case "short" -> Short.class;
            case "byte" -> Byte.class;
            case "boolean" -> Boolean.class;
            case "double" -> Double.class;
            case "float" -> Float.class;
            default -> Character.class;
        };
    }

    private static long minOf(Class<?> type) {
        return type == Long.class ? Long.MIN_VALUE : type == Integer.class ? Integer.MIN_VALUE
                : type == Short.class ? Short.MIN_VALUE : Byte.MIN_VALUE;
    }

    private static long maxOf(Class<?> type) {
        return type == Long.class ? Long.MAX_VALUE : type == Integer.class ? Integer.MAX_VALUE
                : type == Short.class ? Short.MAX_VALUE : Byte.MAX_VALUE;
    }

    /** A request body as it arrived, and the record it was to be read into. */
    private record Kept(byte[] body, Class<?> type) {
    }
}
