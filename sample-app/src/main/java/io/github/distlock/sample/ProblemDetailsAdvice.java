package io.github.distlock.sample;

import java.net.URI;
import java.util.Map;
import java.util.TreeMap;

import io.github.distlock.LockAcquisitionException;
import io.github.distlock.LockBackendException;
import io.github.distlock.LockKeyClosedException;
import io.github.distlock.idempotency.IdempotencyKeyReusedException;
import io.github.distlock.idempotency.RequestInProgressException;
import jakarta.validation.ConstraintViolationException;
import jakarta.validation.Path;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.TypeMismatchException;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.data.redis.RedisConnectionFailureException;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.bind.MethodArgumentNotValidException;
import org.springframework.web.bind.MissingServletRequestParameterException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;
import tools.jackson.core.exc.StreamReadException;

/**
 * Every error as an RFC 9457 problem detail. Spring MVC's own exceptions (malformed JSON, failed {@code @Valid},
 * unsupported method...) get theirs from {@link ResponseEntityExceptionHandler}; the rest are mapped here. Clients
 * never see a stack trace or an exception message from a library: unexpected failures are logged and answered with
 * a generic 500.
 */
@RestControllerAdvice
public class ProblemDetailsAdvice extends ResponseEntityExceptionHandler {

    private static final Log log = LogFactory.getLog(ProblemDetailsAdvice.class);
    // problem types are identifiers, not pages: a URN says so (RFC 9457 allows non-resolvable type URIs)
    private static final String TYPES = "urn:distlock-sample:problem:";

    private final RequestBodyFields bodyFields;

    ProblemDetailsAdvice(RequestBodyFields bodyFields) {
        this.bodyFields = bodyFields;
    }

    /** Another request holds the lock (a concurrent duplicate, or buyers queueing longer than the wait time). */
    @ExceptionHandler(LockAcquisitionException.class)
    ProblemDetail lockNotAcquired(LockAcquisitionException ex) {
        ProblemDetail problem = problem(HttpStatus.CONFLICT, "lock-not-acquired", "Lock not acquired",
                "Another request holds the lock for this operation; it was not performed.");
        problem.setProperty("key", ex.getKey());
        problem.setProperty("waitedMillis", ex.getWaitTime().toMillis());
        return problem;
    }

    /**
     * A lock key closed by the app. The sale's (a sold-out product) never gets here: {@link StockService#sell} answers
     * it as {@link OutOfStockException}. Any other closed key is a refusal too, not a failure.
     */
    @ExceptionHandler(LockKeyClosedException.class)
    ProblemDetail lockKeyClosed(LockKeyClosedException ex) {
        ProblemDetail problem = problem(HttpStatus.CONFLICT, "lock-key-closed", "Closed",
                "The lock for this operation is closed (" + ex.getReason() + "); it was not performed.");
        problem.setProperty("key", ex.getKey());
        return problem;
    }

    /** Redis cannot be reached: nothing was done, the client may retry later. */
    @ExceptionHandler({ LockBackendException.class, RedisConnectionFailureException.class })
    ProblemDetail lockBackendDown(RuntimeException ex) {
        log.warn("Lock backend unavailable: " + ex);
        ProblemDetail problem = problem(HttpStatus.SERVICE_UNAVAILABLE, "lock-backend-unavailable",
                "Lock service unavailable", "The lock service cannot be reached; nothing was done. Retry later.");
        if (ex instanceof LockBackendException backend) {
            problem.setProperty("key", backend.getKey());
        }
        return problem;
    }

    /** The database cannot be reached. */
    @ExceptionHandler(DataAccessResourceFailureException.class)
    ProblemDetail databaseDown(DataAccessResourceFailureException ex) {
        log.warn("Database unavailable: " + ex);
        return problem(HttpStatus.SERVICE_UNAVAILABLE, "database-unavailable", "Database unavailable",
                "The database cannot be reached. Retry later.");
    }

    @ExceptionHandler(DuplicateOrderException.class)
    ProblemDetail duplicateOrder(DuplicateOrderException ex) {
        ProblemDetail problem = problem(HttpStatus.CONFLICT, "duplicate-order", "Duplicate order", ex.getMessage());
        problem.setProperty("userId", ex.getUserId());
        problem.setProperty("productId", ex.getProductId());
        return problem;
    }

    @ExceptionHandler(OutOfStockException.class)
    ProblemDetail outOfStock(OutOfStockException ex) {
        ProblemDetail problem = problem(HttpStatus.CONFLICT, "out-of-stock", "Out of stock", ex.getMessage());
        problem.setProperty("productId", ex.getProductId());
        problem.setProperty("available", ex.getAvailable());
        return problem;
    }

    @ExceptionHandler(StaleFencingTokenException.class)
    ProblemDetail staleToken(StaleFencingTokenException ex) {
        log.warn(ex.getMessage() + "; the write was refused");
        ProblemDetail problem = problem(HttpStatus.CONFLICT, "stale-fencing-token", "Lock lost",
                "This request's lock was superseded before it could write; nothing was done.");
        problem.setProperty("productId", ex.getProductId());
        problem.setProperty("token", ex.getToken());
        return problem;
    }

    /** The Idempotency-Key was used for another request body (the IETF draft's 422). */
    @ExceptionHandler(IdempotencyKeyReusedException.class)
    ProblemDetail idempotencyKeyReused(IdempotencyKeyReusedException ex) {
        return problem(HttpStatus.UNPROCESSABLE_CONTENT, "idempotency-key-reused", "Idempotency key reused",
                "This Idempotency-Key was used for a request with another body; use a new key for a new request.");
    }

    /** The first request with this Idempotency-Key still runs after the retry waited for it (the draft's 409). */
    @ExceptionHandler(RequestInProgressException.class)
    ProblemDetail requestInProgress(RequestInProgressException ex) {
        ProblemDetail problem = problem(HttpStatus.CONFLICT, "request-in-progress", "Request in progress",
                "The first request with this Idempotency-Key is still being processed; retry later for its result.");
        problem.setProperty("waitedMillis", ex.getWaitTime().toMillis());
        return problem;
    }

    @ExceptionHandler(InvalidIdempotencyKeyException.class)
    ProblemDetail invalidIdempotencyKey(InvalidIdempotencyKeyException ex) {
        return invalidRequest("The request has an invalid header.", Map.of("Idempotency-Key", ex.getMessage()));
    }

    @ExceptionHandler(ProductNotFoundException.class)
    ProblemDetail productNotFound(ProductNotFoundException ex) {
        return problem(HttpStatus.NOT_FOUND, "product-not-found", "Product not found", ex.getMessage());
    }

    @ExceptionHandler(OrderNotFoundException.class)
    ProblemDetail orderNotFound(OrderNotFoundException ex) {
        return problem(HttpStatus.NOT_FOUND, "order-not-found", "Order not found", ex.getMessage());
    }

    /** A failed constraint on a request parameter (bodies are handled by {@link #handleMethodArgumentNotValid}). */
    @ExceptionHandler(ConstraintViolationException.class)
    ProblemDetail invalidParameter(ConstraintViolationException ex) {
        Map<String, String> errors = new TreeMap<>();
        ex.getConstraintViolations().forEach(violation -> errors.merge(lastNode(violation.getPropertyPath()),
                violation.getMessage(), ProblemDetailsAdvice::first));
        return invalidRequest("The request has invalid parameters.", errors);
    }

    /** Names each invalid field of a readable body, so the client can tell what to fix. */
    @Override
    protected ResponseEntity<Object> handleMethodArgumentNotValid(MethodArgumentNotValidException ex,
            HttpHeaders headers, HttpStatusCode status, WebRequest request) {
        Map<String, String> errors = new TreeMap<>();
        ex.getBindingResult().getFieldErrors()
                .forEach(error -> errors.merge(error.getField(), error.getDefaultMessage(),
                        ProblemDetailsAdvice::first));
        return handleExceptionInternal(ex, invalidRequest("The request body has invalid fields.", errors), headers,
                status, request);
    }

    /**
     * A body that could not be read: names each field that is not of the expected kind ({@code "userId": "abc"}
     * gives {@code userId: must be a whole number, not a string}) and each invalid one among the rest, or says the
     * body is not a JSON object at all. Jackson's own message is never shown: it names Java classes.
     */
    @Override
    protected ResponseEntity<Object> handleHttpMessageNotReadable(HttpMessageNotReadableException ex,
            HttpHeaders headers, HttpStatusCode status, WebRequest request) {
        Map<String, String> errors = bodyFields.errors(ex, request);
        String detail = !errors.isEmpty() ? "The request body has invalid fields."
                : (ex.getCause() instanceof StreamReadException) ? "The request body is not valid JSON."
                : "The request body must be a JSON object with the documented fields.";
        return handleExceptionInternal(ex, invalidRequest(detail, errors), headers, status, request);
    }

    /** A query parameter or path variable that does not convert ({@code /api/orders/abc}). */
    @Override
    protected ResponseEntity<Object> handleTypeMismatch(TypeMismatchException ex, HttpHeaders headers,
            HttpStatusCode status, WebRequest request) {
        String name = (ex.getPropertyName() != null) ? ex.getPropertyName() : "value";
        Class<?> type = ex.getRequiredType();
        boolean whole = type != null && (type == long.class || type == Long.class || type == int.class
                || type == Integer.class);
        return handleExceptionInternal(ex, invalidRequest("The request has invalid parameters.",
                Map.of(name, whole ? "must be a whole number" : "has the wrong format")), headers, status, request);
    }

    @Override
    protected ResponseEntity<Object> handleMissingServletRequestParameter(MissingServletRequestParameterException ex,
            HttpHeaders headers, HttpStatusCode status, WebRequest request) {
        return handleExceptionInternal(ex, invalidRequest("The request lacks a required parameter.",
                Map.of(ex.getParameterName(), "is required")), headers, status, request);
    }

    @ExceptionHandler(Exception.class)
    ProblemDetail unexpected(Exception ex) {
        log.error("Unexpected failure", ex);
        return problem(HttpStatus.INTERNAL_SERVER_ERROR, "internal-error", "Internal error",
                "The request failed unexpectedly; the details are in the server log.");
    }

    /** The one 400 shape: {@code errors} maps each field or parameter at fault to what it must be. */
    private static ProblemDetail invalidRequest(String detail, Map<String, String> errors) {
        ProblemDetail problem = problem(HttpStatus.BAD_REQUEST, "invalid-request", "Invalid request", detail);
        problem.setProperty("errors", errors);
        return problem;
    }

    /** Of several messages for one field, the alphabetically first: the answer is the same on every call. */
    private static String first(String a, String b) {
        return (a.compareTo(b) <= 0) ? a : b;
    }

    private static String lastNode(Path path) {
        String name = "value";
        for (Path.Node node : path) {
            name = node.getName();
        }
        return name;
    }

    private static ProblemDetail problem(HttpStatus status, String type, String title, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, detail);
        problem.setType(URI.create(TYPES + type));
        problem.setTitle(title);
        return problem;
    }
}
