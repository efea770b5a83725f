package io.github.distlock.generated;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

import io.github.distlock.DistributedLock;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.redisson.autoconfigure.DistlockRedissonAutoConfiguration;
import io.github.distlock.testsupport.RedisServerExtension;
import io.github.distlock.testsupport.RespClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Generated {@code @DistributedLock} annotations, each on a class compiled for it: every combination a small model
 * calls invalid fails the startup with a message that names the method and the reason, and every combination it calls
 * valid starts (all of them in one context) and works at the call: the method runs under its lock and leaves nothing
 * held. Attributes span numbers in every unit (0, one unit, below a millisecond, negative, {@code Long.MAX_VALUE}),
 * the string forms with {@code ${}} placeholders, lock types, fencing, permits, skip, fallbacks and result shapes.
 *
 * <p>CI runs a fixed seed; {@code -Ddistlock.generated.seed=random -Ddistlock.generated.annotations=500} runs long.
 */
class GeneratedAnnotationsStartOrFailNamingTheMethodTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    static final long SEED = AnnotatedCallsFollowTheModelTest.SEED;
    static final int COUNT = Integer.getInteger("distlock.generated.annotations", 30);

    static final int FAULT = 12;
    static final String[] RETURNS = {"String", "int", "void", "java.util.concurrent.CompletableFuture<String>",
            "java.util.concurrent.CompletionStage<String>", "reactor.core.publisher.Mono<String>",
            "reactor.core.publisher.Flux<String>", "java.util.Optional<String>"};
    static final String[] BAD_RETURNS = {"java.util.concurrent.Future<String>"};
    static final String[] KEYS = {"'k:' + #id", "'k:' + #p0", "{'a:' + #id, 'b:' + #id}"};
    static final String[] BAD_KEYS = {"'k:' +", "#nope"};
    static final Long[] WAITS = {DistributedLock.DEFAULT, DistributedLock.DEFAULT, 0L, 1L, 250L, Long.MAX_VALUE};
    static final Long[] BAD_WAITS = {-2L, Long.MIN_VALUE};
    static final String[] WAIT_STRINGS = {"", "", "", "", "", "0", "20ms", "PT0.5S", "${palette.wait}",
            "PT2562047788015215H"};
    static final String[] BAD_WAIT_STRINGS = {"soon", "-1s", "100us", "${palette.nowhere}"};
    static final Long[] LEASES = {DistributedLock.DEFAULT, DistributedLock.DEFAULT, 0L, 5000L, Long.MAX_VALUE};
    static final Long[] BAD_LEASES = {-3L};
    static final String[] LEASE_STRINGS = {"", "", "", "", "", "0", "10s", "PT1M", "${palette.lease}",
            "PT2562047788015215H"};
    static final String[] BAD_LEASE_STRINGS = {"abc", "PT-1S"};
    static final Long[] HOLDS = {0L, 0L, 0L, 0L, 1L, 10L};
    static final Long[] BAD_HOLDS = {-1L};
    static final String[] HOLD_STRINGS = {"", "", "", "", "", "5ms"};
    static final String[] BAD_HOLD_STRINGS = {"x"};
    static final TimeUnit[] UNITS = {TimeUnit.NANOSECONDS, TimeUnit.MICROSECONDS, TimeUnit.MILLISECONDS,
            TimeUnit.MILLISECONDS, TimeUnit.MILLISECONDS, TimeUnit.SECONDS, TimeUnit.DAYS};
    static final String[] TYPES = {"REENTRANT", "REENTRANT", "FAIR", "READ", "WRITE"};
    static final Integer[] PERMITS = {1, 1, 1, 2, 3};
    static final Integer[] BAD_PERMITS = {0, -1};
    static final String[] FALLBACKS = {"", "", "", "", "fb"};
    static final String[] BAD_FALLBACKS = {"fbMissing", "fbWrong"};

    /** One generated annotation and the method it sits on. */
    record Combination(int index, String returns, String key, long waitNumber, String waitString, long lease,
            String leaseString, long hold, String holdString, TimeUnit unit, String type, boolean fenced, int permits,
            boolean skip, String fallback) {

        String className() {
            return "gen.Locked" + index;
        }

        /**
         * Each attribute is one of its valid values, and now and then (one time in {@code 1 / FAULT}) one of its
         * invalid or extreme ones: most combinations then carry one fault or none, and the faults meet each other too.
         */
        static Combination generate(Random r, int index) {
            return new Combination(index, either(r, RETURNS, BAD_RETURNS), either(r, KEYS, BAD_KEYS),
                    either(r, WAITS, BAD_WAITS), either(r, WAIT_STRINGS, BAD_WAIT_STRINGS), either(r, LEASES, BAD_LEASES),
                    either(r, LEASE_STRINGS, BAD_LEASE_STRINGS), either(r, HOLDS, BAD_HOLDS),
                    either(r, HOLD_STRINGS, BAD_HOLD_STRINGS), pick(r, UNITS), pick(r, TYPES), r.nextInt(4) == 0,
                    either(r, PERMITS, BAD_PERMITS), r.nextInt(4) == 0, either(r, FALLBACKS, BAD_FALLBACKS));
        }

        String annotation() {
            StringBuilder a = new StringBuilder("@io.github.distlock.DistributedLock(key = \"" + key.replace("\"", "\\\"")
                    + "\"");
            if (waitNumber != DistributedLock.DEFAULT) {
                a.append(", waitTime = ").append(waitNumber).append("L");
            }
            if (!waitString.isEmpty()) {
                a.append(", waitTimeString = \"").append(waitString).append("\"");
            }
            if (lease != DistributedLock.DEFAULT) {
                a.append(", leaseTime = ").append(lease).append("L");
            }
            if (!leaseString.isEmpty()) {
                a.append(", leaseTimeString = \"").append(leaseString).append("\"");
            }
            if (hold != 0) {
                a.append(", holdAtLeast = ").append(hold).append("L");
            }
            if (!holdString.isEmpty()) {
                a.append(", holdAtLeastString = \"").append(holdString).append("\"");
            }
            a.append(", timeUnit = java.util.concurrent.TimeUnit.").append(unit.name());
            a.append(", type = io.github.distlock.LockType.").append(type);
            a.append(", fenced = ").append(fenced).append(", permits = ").append(permits);
            a.append(", skipIfLocked = ").append(skip);
            if (!fallback.isEmpty()) {
                a.append(", fallbackMethod = \"").append(fallback).append("\"");
            }
            return a.append(")").toString();
        }

        String source() {
            String simple = className().substring(4);
            String ran = BodyCounter.class.getName() + ".ran(\"" + simple + "\");";
            String body = switch (returns) {
                case "String" -> ran + " return \"ran\";";
                case "int" -> ran + " return 1;";
                case "void" -> ran;
                case "reactor.core.publisher.Mono<String>" ->
                        "return reactor.core.publisher.Mono.fromCallable(() -> { " + ran + " return \"ran\"; });";
                case "reactor.core.publisher.Flux<String>" ->
                        "return reactor.core.publisher.Flux.defer(() -> { " + ran + " return reactor.core.publisher.Flux.just(\"ran\"); });";
                case "java.util.Optional<String>" -> ran + " return java.util.Optional.of(\"ran\");";
                default -> ran + " return java.util.concurrent.CompletableFuture.completedFuture(\"ran\");";
            };
            String fallbackBody = switch (returns) {
                case "void" -> "";
                case "int" -> "return 2;";
                case "String" -> "return \"fallback\";";
                default -> "return null;";
            };
            return "package gen;\n"
                    + "public class " + simple + " {\n"
                    + "  " + annotation() + "\n"
                    + "  public " + returns + " place(String id) { " + body + " }\n"
                    + "  public " + returns + " fb(String id) { " + fallbackBody + " }\n"
                    + "  public StringBuilder fbWrong(String id) { return null; }\n"
                    + "}\n";
        }

        /** What each broken rule makes the startup say; empty when the model calls the combination valid. */
        List<String> expectedProblems() {
            List<String> problems = new ArrayList<>();
            if (key.endsWith("+")) {
                problems.add("is not a valid SpEL expression");
            }
            if (key.equals("#nope")) {
                problems.add("which the method does not have");
            }
            Duration waitTime = time("waitTime", waitNumber, DistributedLock.DEFAULT, waitString, problems, Duration.ofSeconds(5));
            Duration leaseTime = time("leaseTime", lease, DistributedLock.DEFAULT, leaseString, problems, Duration.ZERO);
            Duration holdAtLeast = time("holdAtLeast", hold, 0, holdString, problems, Duration.ZERO);
            if (leaseTime != null && holdAtLeast != null && !leaseTime.isZero() && holdAtLeast.compareTo(leaseTime) > 0) {
                problems.add("must not exceed the fixed leaseTime");
            }
            if (permits < 1) {
                problems.add("permits must be at least 1");
            }
            if (permits > 1 && (fenced || !type.equals("REENTRANT"))) {
                problems.add("cannot be combined with");
            }
            boolean reactive = returns.contains("Mono") || returns.contains("Flux");
            if (fenced && reactive) {
                problems.add("fenced = true is not supported on a");
            }
            if (fenced && type.equals("READ")) {
                problems.add("cannot take fenced READ locks");
            }
            if (returns.contains("Future<") && !returns.contains("CompletableFuture")) {
                problems.add("whose completion the lock cannot follow");
            }
            if (skip && !fallback.isEmpty()) {
                problems.add("skipIfLocked and fallbackMethod exclude each other");
            }
            if (fallback.equals("fbMissing")) {
                problems.add("fallbackMethod 'fbMissing' not found");
            }
            if (fallback.equals("fbWrong")) {
                problems.add("which gen." + className().substring(4) + ".place() cannot return");
            }
            if (skip && fallback.isEmpty() && returns.equals("int")) {
                problems.add("skipIfLocked on a method returning int");
            }
            return problems;
        }

        /** The model of one time attribute: number or string, not both; never negative, never between 0 and 1 ms. */
        private Duration time(String name, long number, long unset, String text, List<String> problems, Duration dflt) {
            if (!text.isEmpty() && number != unset) {
                problems.add(name + " = " + number + " and " + name + "String = \"" + text + "\" are both set");
                return null;
            }
            Duration value;
            if (!text.isEmpty()) {
                switch (text) {
                    case "soon", "abc", "x" -> {
                        problems.add(name + "String = \"" + text + "\" is not a duration");
                        return null;
                    }
                    case "${palette.nowhere}" -> {
                        problems.add("Could not resolve placeholder 'palette.nowhere'");
                        return null;
                    }
                    case "-1s", "PT-1S" -> {
                        problems.add(name + "String = \"" + text + "\" is negative");
                        return null;
                    }
                    case "100us" -> {
                        problems.add(name + "String = \"" + text + "\" is below 1 ms");
                        return null;
                    }
                    case "${palette.wait}" -> value = Duration.ofMillis(30);
                    case "${palette.lease}" -> value = Duration.ofSeconds(20);
                    default -> value = org.springframework.boot.convert.DurationStyle.detectAndParse(text,
                            unit.toChronoUnit());
                }
                return value;
            }
            if (number == unset) {
                return (unset == 0) ? null : dflt;
            }
            if (number < 0) {
                problems.add(name + " must be >= 0");
                return null;
            }
            value = Duration.ofNanos(unit.toNanos(number));
            if (!value.isZero() && value.compareTo(Duration.ofMillis(1)) < 0) {
                problems.add(name + " must be " + (name.equals("leaseTime") ? "0 (watchdog)" : "0") + " or at least 1 ms");
                return null;
            }
            return value;
        }

        @Override
        public String toString() {
            return className() + " " + returns + " " + annotation();
        }
    }

    private static <T> T either(Random random, T[] valid, T[] invalid) {
        return (random.nextInt(FAULT) == 0) ? pick(random, invalid) : pick(random, valid);
    }

    private static <T> T pick(Random random, T[] values) {
        return values[random.nextInt(values.length)];
    }

    /** A context whose class loader is the generated classes': CGLIB defines their proxies through it. */
    private ApplicationContextRunner runner(ClassLoader generated) {
        return new ApplicationContextRunner().withClassLoader(generated)
                .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, AopAutoConfiguration.class,
                        DistlockRedissonAutoConfiguration.class, DistlockAutoConfiguration.class))
                .withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + redis.port(),
                        "palette.wait=30ms", "palette.lease=20s");
    }

    @Test
    void everyInvalidCombinationFailsTheStartupNamingTheMethodAndEveryValidOneWorksAtTheCall() throws Exception {
        Random random = new Random(SEED);
        List<Combination> combinations = new ArrayList<>();
        Map<String, String> sources = new LinkedHashMap<>();
        for (int i = 0; i < COUNT; i++) {
            Combination combination = Combination.generate(random, i);
            combinations.add(combination);
            sources.put(combination.className(), combination.source());
        }
        Map<String, Class<?>> classes = GeneratedSources.compile(sources, DistributedLock.class, Mono.class,
                org.reactivestreams.Publisher.class, GeneratedAnnotationsStartOrFailNamingTheMethodTest.class);
        ClassLoader generated = classes.values().iterator().next().getClassLoader();
        // every disagreement with the model is collected, so that one run reports all it found
        List<String> failures = new ArrayList<>();
        List<Combination> valid = new ArrayList<>();
        for (Combination combination : combinations) {
            List<String> problems = combination.expectedProblems();
            if (problems.isEmpty()) {
                valid.add(combination);
                continue;
            }
            runner(generated).withBean(classes.get(combination.className())).run(context -> collect(failures, () -> {
                assertThat(context).as(combination + " must fail the startup").hasFailed();
                String trace = stackTrace(context.getStartupFailure());
                assertThat(trace).as(combination.toString()).contains(combination.className() + ".place()");
                assertThat(problems).as(combination + " failed with: " + firstLines(trace)).anyMatch(trace::contains);
            }));
        }
        ApplicationContextRunner all = runner(generated);
        for (Combination combination : valid) {
            all = all.withBean(classes.get(combination.className()));
        }
        all.run(context -> {
            if (context.getStartupFailure() != null) {
                // one of them was refused: find which, each in a context of its own
                for (Combination combination : valid) {
                    runner(generated).withBean(classes.get(combination.className())).run(single -> collect(failures,
                            () -> assertThat(single).as(combination + " is valid and must start").hasNotFailed()));
                }
                return;
            }
            for (Combination combination : valid) {
                collect(failures, () -> worksAtTheCall(context.getBean(classes.get(combination.className())), combination));
            }
        });
        assertThat(failures).as("seed " + SEED + ": combinations where the annotation path and the model disagree")
                .isEmpty();
    }

    interface Check {
        void run() throws Exception;
    }

    private static void collect(List<String> failures, Check check) {
        try {
            check.run();
        }
        catch (Throwable failure) {
            failures.add(failure.getMessage());
        }
    }

    /** The valid combination runs its body once, returns what the body returned and leaves nothing held. */
    private static void worksAtTheCall(Object bean, Combination combination) throws Exception {
        Method place = bean.getClass().getMethod("place", String.class);
        String simple = combination.className().substring(4);
        int before = BodyCounter.runs(simple);
        Object value;
        try {
            value = settle(place.invoke(bean, "x" + combination.index()));
        }
        catch (Throwable ex) {
            Throwable cause = (ex instanceof java.lang.reflect.InvocationTargetException invocation)
                    ? invocation.getTargetException() : ex;
            throw new AssertionError(combination + " was accepted at startup but failed at the call: " + cause, cause);
        }
        assertThat(BodyCounter.runs(simple)).as(combination + " ran").isEqualTo(before + 1);
        if (!combination.returns().equals("void")) {
            assertThat(value).as(combination.toString()).isIn("ran", 1, Optional.of("ran"), List.of("ran"));
        }
        boolean holds = combination.hold() != 0 || !combination.holdString().isEmpty();
        if (!holds) {
            String prefix = "lock:" + (combination.key().startsWith("{") ? "a:" : "k:") + "x" + combination.index();
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(keysLike(prefix))
                    .as(combination + " released").isEmpty());
        }
    }

    /** Keys of {@code prefix} that hold something: a fencing counter stays behind with an expiry, and is no lock. */
    private static List<?> keysLike(String prefix) {
        try (RespClient client = RespClient.connect(redis.port())) {
            return ((List<?>) client.call("KEYS", "*" + prefix + "*")).stream()
                    .filter(key -> !(String.valueOf(key).startsWith("redisson_lock_token")
                            && (Long) client.call("PTTL", String.valueOf(key)) > 0))
                    .toList();
        }
    }

    private static Object settle(Object raw) throws Throwable {
        try {
            if (raw instanceof CompletionStage<?> stage) {
                return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
            }
            if (raw instanceof Mono<?> mono) {
                return mono.block(Duration.ofSeconds(10));
            }
            if (raw instanceof Flux<?> flux) {
                return flux.collectList().block(Duration.ofSeconds(10));
            }
            return raw;
        }
        catch (java.util.concurrent.ExecutionException ex) {
            throw ex.getCause();
        }
    }

    private static String stackTrace(Throwable failure) {
        java.io.StringWriter text = new java.io.StringWriter();
        failure.printStackTrace(new java.io.PrintWriter(text));
        return text.toString();
    }

    private static String firstLines(String trace) {
        return String.join("\n", trace.lines().filter(l -> !l.startsWith("\tat ")).limit(8).toList());
    }
}
