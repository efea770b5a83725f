package io.github.distlock.actuate;

import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.github.distlock.ActiveLock;
import io.github.distlock.LockActivity;
import io.github.distlock.autoconfigure.DistlockProperties;
import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockProvider;
import io.github.distlock.spi.NotALockException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.audit.listener.AuditApplicationEvent;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.context.ApplicationEventPublisher;

/**
 * The actuator endpoint {@code distlock}: what an operator asks at 3 a.m.
 * <ul>
 * <li>{@code GET /actuator/distlock}: the locks this instance holds and the calls waiting for one, and the effective
 * configuration;</li>
 * <li>{@code GET /actuator/distlock/{key}}: who holds the key on any instance (the backend must be a
 * {@link LockInspector}), named by the identity each instance announced;</li>
 * <li>{@code DELETE /actuator/distlock/{key}?owner=...}: takes that owner's holds away (and nothing else: other readers
 * and permit holders keep theirs) if it (as {@code GET} names it) still holds the key, else answers 409 with the
 * holders now; without {@code owner}, every holder of every type at that moment (racy: the lock may have changed hands
 * since the operator looked). Only with
 * {@code distlock.actuator.force-release-enabled=true}; logged at WARN with the key and the holders evicted, and
 * published as an audit event of type {@value #FORCE_RELEASE_AUDIT_TYPE} (see {@link #forceRelease}). A key
 * that exists but is not a lock (another type, a hash that is not a lock: possible with an empty
 * {@code distlock.key-prefix}) is refused with 400 and left alone.</li>
 * </ul>
 * A key is given as listed (prefix included) or without the configured prefix, which is then added; keys containing
 * {@code /} are matched across path segments.
 *
 * <p>Keys can carry personal data ({@code order:<user id>}): they are shown following Actuator's convention
 * ({@code management.endpoint.distlock.show-values}: {@code never} by default, {@code when-authorized} with
 * {@code management.endpoint.distlock.roles}, or {@code always}); otherwise every key in a response reads
 * {@value #MASK}.
 *
 * <p>An owner reads the same everywhere: as the backend names it ({@link LockInspector#ownerName}, such as
 * {@code <instance id>:<owner id>}), in this instance's list, in the key view and in what {@code DELETE ?owner=}
 * takes.
 */
@Endpoint(id = "distlock")
public class DistlockEndpoint {

    private static final Log logger = LogFactory.getLog(DistlockEndpoint.class);

    /** What a key reads like when it is not shown. */
    public static final String MASK = "******";

    /** The type of the audit event every force release through the endpoint publishes. */
    public static final String FORCE_RELEASE_AUDIT_TYPE = "DISTLOCK_FORCE_RELEASE";

    /** The longest owner a force release takes: far above any backend's owner name. */
    public static final int MAX_OWNER_LENGTH = 256;

    /** The principal of an audit event when the request carried none. */
    public static final String ANONYMOUS = "anonymous";

    /** {@code null} when the application's own template keeps no calls in progress. */
    private final @Nullable LockActivity activity;
    private final LockProvider provider;
    private final LockInstance self;
    private final DistlockProperties properties;
    private final String backend;
    private final Show showValues;
    private final Set<String> roles;
    /** {@code null}: force releases are logged but not published as audit events. */
    private final @Nullable ApplicationEventPublisher auditEvents;

    /**
     * An endpoint that publishes no audit event.
     *
     * @param activity the calls in progress of this instance's template, or {@code null} when the template keeps none
     * (an application's own {@code LockTemplate} that is no {@link LockActivity}): nothing is then listed
     * @param provider the backend; a {@link LockInspector} answers lookups and force releases
     * @param self this instance's identity
     * @param properties the effective {@code distlock.*} settings
     * @param backend the backend in use as the startup report names it, such as {@code redis (spring.data.redis.*)}
     * @param showValues when keys are shown
     * @param roles the roles that may see keys when {@code showValues} is {@link Show#WHEN_AUTHORIZED}
     */
    public DistlockEndpoint(@Nullable LockActivity activity, LockProvider provider, LockInstance self,
            DistlockProperties properties, String backend, Show showValues, Set<String> roles) {
        this(activity, provider, self, properties, backend, showValues, roles, null);
    }

    /**
     * @param activity the calls in progress of this instance's template, or {@code null} when the template keeps none
     * (an application's own {@code LockTemplate} that is no {@link LockActivity}): nothing is then listed
     * @param provider the backend; a {@link LockInspector} answers lookups and force releases
     * @param self this instance's identity
     * @param properties the effective {@code distlock.*} settings
     * @param backend the backend in use as the startup report names it, such as {@code redis (spring.data.redis.*)}
     * @param showValues when keys are shown
     * @param roles the roles that may see keys when {@code showValues} is {@link Show#WHEN_AUTHORIZED}
     * @param auditEvents where every force release is published as an {@link AuditApplicationEvent} (Spring Boot's
     * {@code AuditListener} stores it in the application's {@code AuditEventRepository} when there is one), or
     * {@code null} to publish none
     */
    public DistlockEndpoint(@Nullable LockActivity activity, LockProvider provider, LockInstance self,
            DistlockProperties properties, String backend, Show showValues, Set<String> roles,
            @Nullable ApplicationEventPublisher auditEvents) {
        this.auditEvents = auditEvents;
        this.activity = activity;
        this.provider = provider;
        this.self = self;
        this.properties = properties;
        this.backend = backend;
        this.showValues = (showValues != null) ? showValues : Show.NEVER;
        this.roles = (roles != null) ? Set.copyOf(roles) : Set.of();
    }

    /** {@code GET /actuator/distlock}. */
    @ReadOperation
    public LocksDescriptor locks(SecurityContext securityContext) {
        boolean show = showKeys(securityContext);
        List<ActiveLock> active = activeLocks();
        List<HeldLockDescriptor> held = active.stream().filter(ActiveLock::held)
                .map(lock -> HeldLockDescriptor.of(lock, show, ownerName(lock.owner()))).toList();
        List<WaitingCallDescriptor> waiting = active.stream().filter(lock -> !lock.held())
                .map(lock -> WaitingCallDescriptor.of(lock, show, ownerName(lock.owner()))).toList();
        return new LocksDescriptor(InstanceDescriptor.of(self), held, waiting, configuration(),
                activity != null);
    }

    /** {@code GET /actuator/distlock/{key}}. */
    @ReadOperation
    public KeyDescriptor lock(SecurityContext securityContext, @Selector(match = Selector.Match.ALL_REMAINING) String[] key) {
        boolean show = showKeys(securityContext);
        String fullKey = fullKey(key);
        List<HeldLockDescriptor> here = localHolds(fullKey, show);
        if (!(provider instanceof LockInspector inspector)) {
            return new KeyDescriptor(shown(fullKey, show), !here.isEmpty() ? Boolean.TRUE : null, null, here,
                    "the backend (" + provider.getClass().getSimpleName() + ") cannot say who holds a key on other "
                            + "instances: it does not implement LockInspector");
        }
        List<HolderDescriptor> holders = backendCall(fullKey, show, () -> inspector.holders(fullKey)).stream()
                .map(holder -> HolderDescriptor.of(holder, self)).toList();
        return new KeyDescriptor(shown(fullKey, show), !holders.isEmpty(), holders, here, null);
    }

    /**
     * {@code DELETE /actuator/distlock/{key}[?owner=...]}: only with {@code distlock.actuator.force-release-enabled=true}.
     *
     * <p>With {@code owner} (as {@code GET} names it) that owner's holds are taken away, and only if it still holds the
     * key, checked and deleted in one atomic step; the other holders keep theirs. Otherwise nothing is done and the
     * answer lists who holds it now (409 over HTTP). The owner is given as {@code GET} names it
     * ({@code <instance id>:<owner id>}): an empty one, one over {@value #MAX_OWNER_LENGTH} characters or with control
     * or line-breaking characters is a bad request (400), and nothing is done, nor audited. A bare owner id matches no
     * holder of a first-party backend (each names its owners with their instance): the 409 says so. Without {@code owner}, every holder of the key at the moment of the call is evicted: if
     * the lock changed hands between the operator's look and the call, the new holder, possibly healthy, is the one
     * evicted.
     *
     * <p>Every call that passes those checks, whatever its outcome (released, refused, nobody held the key, force release disabled, the backend
     * unable to, the backend failing), is published as an {@link AuditApplicationEvent} of type
     * {@value #FORCE_RELEASE_AUDIT_TYPE}: its principal is the caller ({@value #ANONYMOUS} when the request carried
     * none), its data the {@code key} (shown or masked as {@code show-values} says for the caller), a {@code keyHash} (the
     * first 16 hex digits of the key's SHA-256, unsalted, so that records of one key can be found whatever the masking;
     * a key of few possible values can be guessed from it), the
     * {@code expectedOwner} (when given), the {@code outcome} ({@code released}, {@code refused},
     * {@code not-held}, {@code disabled}, {@code unsupported} or {@code failed}), {@code released}, the
     * {@code evicted} owners and, when refused, the {@code holders} now.
     */
    @DeleteOperation
    public ForceReleaseDescriptor forceRelease(SecurityContext securityContext,
            @Selector(match = Selector.Match.ALL_REMAINING) String[] key, @Nullable String owner) {
        boolean show = showKeys(securityContext);
        String fullKey = fullKey(key);
        String who = (securityContext != null && securityContext.getPrincipal() != null)
                ? securityContext.getPrincipal().getName() : ANONYMOUS;
        String asked = (owner != null) ? checkedOwner(owner) : null;
        if (!properties.getActuator().isForceReleaseEnabled()) {
            audit(who, fullKey, show, asked, "disabled", List.of(), null);
            return new ForceReleaseDescriptor(shown(fullKey, show), false, List.of(), null, "force release is disabled; "
                    + "enable it with distlock.actuator.force-release-enabled=true");
        }
        if (!(provider instanceof LockInspector inspector)) {
            audit(who, fullKey, show, asked, "unsupported", List.of(), null);
            return new ForceReleaseDescriptor(shown(fullKey, show), false, List.of(), null, "the backend ("
                    + provider.getClass().getSimpleName() + ") cannot release another holder's lock: it does not "
                    + "implement LockInspector");
        }
        String expectedOwner = asked;
        LockInspector.ForceRelease outcome;
        try {
            outcome = backendCall(fullKey, show, () -> inspector.forceRelease(fullKey, expectedOwner));
        }
        catch (RuntimeException ex) {
            audit(who, fullKey, show, expectedOwner, "failed", List.of(), null);
            throw ex;
        }
        List<HolderDescriptor> holders = outcome.holders().stream().map(holder -> HolderDescriptor.of(holder, self))
                .toList();
        if (!outcome.released()) {
            if (expectedOwner != null) {
                audit(who, fullKey, show, expectedOwner, "refused", List.of(), outcome.holders());
                logger.warn("Force release of lock '" + fullKey + "' from owner " + expectedOwner + " asked through the "
                        + "actuator endpoint by " + who + ": refused, "
                        + (holders.isEmpty() ? "nobody holds it now" : "held now by " + describe(outcome.holders())));
                return new ForceReleaseDescriptor(shown(fullKey, show), false, List.of(), holders, "owner "
                        + expectedOwner + " does not hold the lock (any more); nothing was released"
                        + (isBareOwnerId(expectedOwner) ? "; a bare owner id names no instance: give the owner as GET "
                                + "/actuator/distlock/{key} names it (<instance id>:<owner id>)" : ""));
            }
            audit(who, fullKey, show, null, "not-held", List.of(), null);
            logger.warn("Force release of lock '" + fullKey + "' asked through the actuator endpoint by " + who
                    + ": nobody held it");
            return new ForceReleaseDescriptor(shown(fullKey, show), false, List.of(), null, null);
        }
        audit(who, fullKey, show, expectedOwner, "released", outcome.holders(), null);
        logger.warn("Force-released lock '" + fullKey + "' through the actuator endpoint (asked by " + who
                + (expectedOwner != null ? ", from owner " + expectedOwner : ", from whoever held it") + "), evicting "
                + describe(outcome.holders()) + ". Each evicted holder is told through its lease-lost path as soon as "
                + "its instance hears of the eviction, watchdog or fixed lease alike; its code may still be running "
                + "until then. Another caller may take the lock now.");
        return new ForceReleaseDescriptor(shown(fullKey, show), true, holders, null, null);
    }

    /**
     * The owner a force release expects, trimmed; a value that cannot be an owner as {@code GET} names it is refused
     * before anything is done: an empty one would otherwise mean "whoever holds it" (a script's unset variable evicting
     * a healthy holder), and what is logged and audited stays one plain line.
     */
    private String checkedOwner(String owner) {
        String trimmed = owner.trim();
        String form = "give the owner as GET /actuator/distlock/{key} names it (<instance id>:<owner id>)";
        if (trimmed.isEmpty()) {
            throw badRequest("The owner is empty: " + form + ", or leave the parameter out to evict every holder");
        }
        if (trimmed.length() > MAX_OWNER_LENGTH) {
            throw badRequest("The owner is " + trimmed.length() + " characters long, at most " + MAX_OWNER_LENGTH
                    + " are allowed: " + form);
        }
        if (trimmed.chars().anyMatch(DistlockEndpoint::breaksALine)) {
            throw badRequest("The owner contains control characters: " + form);
        }
        return trimmed;
    }

    /** Control characters, line and paragraph separators, and invisible format characters (bidi overrides). */
    private static boolean breaksALine(int c) {
        int type = Character.getType(c);
        return Character.isISOControl(c) || type == Character.LINE_SEPARATOR || type == Character.PARAGRAPH_SEPARATOR
                || type == Character.FORMAT;
    }

    /** A number alone, where the backend names owners otherwise (every first-party backend adds its instance id). */
    private boolean isBareOwnerId(String owner) {
        if (!owner.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return false;
        }
        try {
            return !ownerName(Long.parseLong(owner)).equals(owner);
        }
        catch (NumberFormatException ex) {
            return false;
        }
    }

    private static InvalidEndpointRequestException badRequest(String message) {
        return new InvalidEndpointRequestException(message, message);
    }

    /** The owner as the backend names it, the one format an operator sees everywhere. */
    private String ownerName(long ownerId) {
        return (provider instanceof LockInspector inspector) ? inspector.ownerName(ownerId) : Long.toString(ownerId);
    }

    /** Publishes one force release as Spring Boot's audit event, when there is somewhere to publish it. */
    private void audit(String principal, String fullKey, boolean show, @Nullable String expectedOwner, String outcome,
            List<LockHolderInfo> evicted, @Nullable List<LockHolderInfo> holdersNow) {
        if (auditEvents == null) {
            return;
        }
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("key", shown(fullKey, show));
        data.put("keyHash", keyHash(fullKey));
        if (expectedOwner != null) {
            data.put("expectedOwner", expectedOwner);
        }
        data.put("outcome", outcome);
        data.put("released", "released".equals(outcome));
        data.put("evicted", evicted.stream().map(LockHolderInfo::owner).toList());
        if (holdersNow != null) {
            data.put("holders", holdersNow.stream().map(LockHolderInfo::owner).toList());
        }
        try {
            auditEvents.publishEvent(new AuditApplicationEvent(principal, FORCE_RELEASE_AUDIT_TYPE, data));
        }
        catch (RuntimeException ex) {
            // the release is done (or refused) whatever the audit listener does: the answer must still say which
            logger.error("Could not publish the audit event of the force release of lock '" + fullKey + "' asked by "
                    + principal + " (" + outcome + ")", ex);
        }
    }

    /** The first 16 hex digits of the key's SHA-256: finds the audit records of a key without showing it. */
    static String keyHash(String fullKey) {
        try {
            byte[] digest = java.security.MessageDigest.getInstance("SHA-256")
                    .digest(fullKey.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return java.util.HexFormat.of().formatHex(digest, 0, 8);
        }
        catch (java.security.NoSuchAlgorithmException ex) {
            // every Java platform has SHA-256
            throw new IllegalStateException(ex);
        }
    }

    /** A key the backend refuses (a broken hash tag) is a bad request, answered 400 over HTTP. */
    private static <T> T backendCall(String fullKey, boolean show, java.util.function.Supplier<T> call) {
        try {
            return call.get();
        }
        catch (IllegalArgumentException ex) {
            // a NotALockException's message never contains the key
            String message = (show || ex instanceof NotALockException) ? ex.getMessage()
                    : "the lock key is not valid for this backend";
            throw new InvalidEndpointRequestException(message, message);
        }
    }

    /** Whether {@code distlock.actuator.force-release-enabled} is on. */
    boolean forceReleaseEnabled() {
        return properties.getActuator().isForceReleaseEnabled();
    }

    private static String describe(Collection<LockHolderInfo> holders) {
        return String.join("; ", holders.stream().map(holder -> "owner " + holder.owner() + " (" + holder.mode()
                + ", instance " + ((holder.instance() != null) ? holder.instance().toString()
                        : "unknown: not announced or expired") + ")").toList());
    }

    private List<HeldLockDescriptor> localHolds(String fullKey, boolean show) {
        return activeLocks().stream().filter(lock -> lock.held() && lock.key().equals(fullKey))
                .map(lock -> HeldLockDescriptor.of(lock, show, ownerName(lock.owner()))).toList();
    }

    private List<ActiveLock> activeLocks() {
        return (activity != null) ? activity.activeLocks() : List.of();
    }

    /** The key as the backend knows it: prefix included (added when missing). */
    String fullKey(String[] segments) {
        String key = (segments != null) ? String.join("/", segments) : "";
        if (key.isBlank()) {
            throw new InvalidEndpointRequestException("No lock key given", "No lock key given");
        }
        String prefix = properties.getKeyPrefix();
        return key.startsWith(prefix) ? key : prefix + key;
    }

    private boolean showKeys(SecurityContext securityContext) {
        return showValues.isShown((securityContext != null) ? securityContext : SecurityContext.NONE, roles);
    }

    private static String shown(String key, boolean show) {
        return show ? key : MASK;
    }

    private ConfigurationDescriptor configuration() {
        return new ConfigurationDescriptor(backend, provider.getClass().getName(), properties.getKeyPrefix(),
                millis(properties.getWaitTime()), millis(properties.getLeaseTime()),
                millis(properties.getWatchdogTimeout()), properties.getOrder(),
                properties.isReleaseAfterTransaction(), properties.getActuator().isForceReleaseEnabled(),
                showValues.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-'));
    }

    private static Long millis(Duration duration) {
        return (duration != null) ? duration.toMillis() : null;
    }

    // ---------------------------------------------------------------- descriptors (plain strings and numbers)

    /**
     * The answer of {@code GET /actuator/distlock}.
     *
     * @param instance this instance
     * @param held the locks held through this instance's template, one per key
     * @param waiting the calls waiting for a lock, one per key
     * @param configuration the effective settings
     * @param tracked whether the template keeps its calls (an application's own {@code LockTemplate} may not)
     */
    public record LocksDescriptor(InstanceDescriptor instance, List<HeldLockDescriptor> held,
            List<WaitingCallDescriptor> waiting, ConfigurationDescriptor configuration, boolean tracked)
            implements OperationResponseBody {
    }

    /**
     * One held lock.
     *
     * @param key the full key, or {@value #MASK}
     * @param type the lock type
     * @param name the call: the annotated method or the template call's name
     * @param thread the thread that took it
     * @param owner the call's owner as the backend names it ({@link LockInspector#ownerName}, such as
     * {@code <instance id>:<owner id>}): what {@code GET /actuator/distlock/{key}} lists and {@code DELETE ?owner=}
     * takes; the owner id alone when the backend is no {@link LockInspector}
     * @param since when it was acquired (ISO-8601)
     * @param heldForMillis how long it has been held
     * @param lease {@code watchdog} (renewed while held) or {@code fixed}
     * @param leaseMillis the fixed lease, or {@code null}
     * @param leaseRemainingMillis what is left of the fixed lease by this instance's clock, or {@code null}
     * @param fencingToken the fencing token, or {@code null} when none was issued
     */
    public record HeldLockDescriptor(String key, String type, String name, String thread, String owner, String since,
            long heldForMillis, String lease, Long leaseMillis, Long leaseRemainingMillis, Long fencingToken) {

        static HeldLockDescriptor of(ActiveLock lock, boolean show, String owner) {
            return new HeldLockDescriptor(shown(lock.key(), show), lock.type().name(), lock.name(), lock.thread(),
                    owner, lock.since().toString(), lock.duration().toMillis(),
                    (lock.lease() == null) ? "watchdog" : "fixed", millis(lock.lease()), millis(lock.leaseRemaining()),
                    (lock.fencingToken() >= 0) ? lock.fencingToken() : null);
        }
    }

    /**
     * One call waiting for a lock.
     *
     * @param key the full key, or {@value #MASK}
     * @param type the lock type
     * @param name the call
     * @param thread the thread that asked
     * @param owner the call's owner as the backend will name it once it holds the lock (see
     * {@link HeldLockDescriptor#owner})
     * @param since when it started waiting (ISO-8601)
     * @param waitingForMillis how long it has waited
     */
    public record WaitingCallDescriptor(String key, String type, String name, String thread, String owner, String since,
            long waitingForMillis) {

        static WaitingCallDescriptor of(ActiveLock lock, boolean show, String owner) {
            return new WaitingCallDescriptor(shown(lock.key(), show), lock.type().name(), lock.name(), lock.thread(),
                    owner, lock.since().toString(), lock.duration().toMillis());
        }
    }

    /**
     * An application instance.
     *
     * @param application its {@code spring.application.name}
     * @param host its host
     * @param pid its process id
     */
    public record InstanceDescriptor(String application, String host, long pid) {

        static InstanceDescriptor of(LockInstance instance) {
            return (instance != null) ? new InstanceDescriptor(instance.application(), instance.host(), instance.pid())
                    : null;
        }
    }

    /**
     * The effective settings.
     *
     * @param backend the backend in use, as the startup report names it
     * @param provider the provider's class
     * @param keyPrefix {@code distlock.key-prefix}
     * @param waitTimeMillis {@code distlock.wait-time}
     * @param leaseTimeMillis {@code distlock.lease-time}, {@code null} for the watchdog
     * @param watchdogTimeoutMillis {@code distlock.watchdog-timeout}
     * @param order {@code distlock.order}
     * @param releaseAfterTransaction {@code distlock.release-after-transaction}
     * @param forceReleaseEnabled {@code distlock.actuator.force-release-enabled}
     * @param showValues {@code management.endpoint.distlock.show-values}
     */
    public record ConfigurationDescriptor(String backend, String provider, String keyPrefix, Long waitTimeMillis,
            Long leaseTimeMillis, Long watchdogTimeoutMillis, int order, boolean releaseAfterTransaction,
            boolean forceReleaseEnabled, String showValues) {
    }

    /**
     * The answer of {@code GET /actuator/distlock/{key}}.
     *
     * @param key the full key, or {@value #MASK}
     * @param held whether anyone holds it anywhere; {@code null} when the backend cannot say (and it is not held here)
     * @param holders who holds it, on any instance; {@code null} when the backend cannot say
     * @param heldHere the holds of this instance's template on the key
     * @param note why the answer is partial, or {@code null}
     */
    public record KeyDescriptor(String key, Boolean held, List<HolderDescriptor> holders,
            List<HeldLockDescriptor> heldHere, String note) implements OperationResponseBody {
    }

    /**
     * One holder as the backend sees it.
     *
     * @param owner the backend's owner, such as {@code <client id>:<owner id>}
     * @param instanceId the backend's id of the holder's instance, the part of {@code owner} before the colon
     * (on Redis, Redisson's client id)
     * @param instance the instance as it announced itself, or {@code null} (never announced, or its entry expired:
     * possibly dead, its lock living out its lease)
     * @param thisInstance whether it is this instance
     * @param mode {@code exclusive}, {@code read}, {@code write} or {@code permit}
     * @param remainingMillis how long this hold outlives a holder that stops renewing it
     */
    public record HolderDescriptor(String owner, String instanceId, InstanceDescriptor instance, boolean thisInstance,
            String mode, Long remainingMillis) {

        static HolderDescriptor of(LockHolderInfo holder, LockInstance self) {
            return new HolderDescriptor(holder.owner(), holder.instanceId(), InstanceDescriptor.of(holder.instance()),
                    holder.instance() != null && holder.instance().equals(self), holder.mode(),
                    millis(holder.remaining()));
        }
    }

    /**
     * The answer of {@code DELETE /actuator/distlock/{key}}.
     *
     * @param key the full key, or {@value #MASK}
     * @param released whether a lock was taken away
     * @param evicted the holders evicted
     * @param holders when an expected owner was given and does not hold the key: who holds it now (possibly nobody);
     * otherwise {@code null}
     * @param note why nothing was done, or {@code null}
     */
    public record ForceReleaseDescriptor(String key, boolean released, List<HolderDescriptor> evicted,
            List<HolderDescriptor> holders, String note)
            implements OperationResponseBody {
    }
}
