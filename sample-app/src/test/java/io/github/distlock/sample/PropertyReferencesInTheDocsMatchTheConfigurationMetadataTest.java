package io.github.distlock.sample;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.springframework.boot.convert.DurationStyle;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The property names and defaults written in {@code README.md}, {@code CONTRIBUTING.md} and {@code docs/*.md} are the
 * ones of the configuration metadata (the same metadata {@link PropertyReferenceMatchesTheConfigurationMetadataTest}
 * renders {@code docs/properties.md} from). The rule, kept simple on purpose:
 * <ol>
 * <li><b>Names.</b> Every {@code distlock.*}, {@code management.endpoint.distlock.*} and
 * {@code management.health.distlock.*} name in the text (not preceded by a letter, digit, {@code .}, {@code /} or
 * {@code $}: so package names such as {@code io.github.distlock.spi} and {@code -Ddistlock.…} system properties are not
 * names) and every such key of a {@code yaml}/{@code yml}/{@code properties} code block (YAML nesting flattened to
 * dots) is a property of the metadata, or a prefix of one: a group written {@code distlock.redis.}, or a family
 * written {@code distlock.redis.retry-*}. A sentence's full stop after a name is not part of it. The few
 * {@code distlock.*} names that are not properties (meters, the observation, the generated tests' system properties,
 * Actuator's own health switch) are listed in {@link #NOT_PROPERTIES}.</li>
 * <li><b>Defaults.</b> A default is checked where the docs state it in one of two forms: a YAML line
 * {@code name: value   # default…} (the comment begins with the word "default"), or prose
 * {@code `name` (default `X`)} / {@code `name`, default X}. It must equal the metadata's {@code defaultValue}:
 * durations compared as durations ({@code 0s} is {@code 0}), enums without regard to case, {@code -} or {@code _}
 * ({@code read-only} is {@code READ_ONLY}), anything else as text. Not checkable, so not checked: a default the
 * metadata does not have (computed in code) and a default that is another property.</li>
 * </ol>
 * A failure lists every offending {@code file:line}.
 */
class PropertyReferencesInTheDocsMatchTheConfigurationMetadataTest {

    /** Names of ours that are not configuration properties, each with where it comes from. */
    static final Set<String> NOT_PROPERTIES = Set.of(
            // meters and the observation (docs/operations.md)
            "distlock.acquire", "distlock.held", "distlock.locks.held", "distlock.locks.waiting", "distlock.lock",
            "distlock.lock.acquired",
            // Spring Boot's switch of @ConditionalOnEnabledHealthIndicator("distlock"): real, but not in the metadata
            "management.health.distlock.enabled");

    /** System properties of the build's generated tests, named in a table of docs/model-tests.md. */
    private static final String GENERATED_TESTS = "distlock.generated.";

    private static final Pattern NAME = Pattern.compile(
            "(?<![\\w.$/])((?:distlock|management\\.(?:endpoint|health)\\.distlock)(?:\\.[a-z][a-z0-9-]*)+)(\\*|\\.\\*)?");

    private static final Pattern OURS = Pattern.compile("^(?:distlock|management\\.(?:endpoint|health)\\.distlock)\\..*");

    /** {@code `name` (default `X`)} or {@code `name`, default X}: the stated default in group 2. */
    private static final Pattern PROSE_DEFAULT = Pattern.compile(
            "`([a-z][a-z0-9.-]*)`\\s*(?:\\(|,)\\s*default:?\\s+`?([^`\\s,;)]+)`?");

    private static final Pattern FENCE = Pattern.compile("^\\s*```\\s*(\\w*)\\s*$");

    private static final Pattern YAML_KEY = Pattern.compile("^(\\s*)([A-Za-z0-9_.\\[\\]-]+):(?:\\s+(.*))?$");

    private static final Pattern PROPERTIES_KEY = Pattern.compile("^\\s*([A-Za-z0-9_.\\[\\]-]+)\\s*[=:]\\s*(.*)$");

    @Test
    void everyPropertyNamedInTheDocsIsInTheMetadataWithTheDefaultTheDocsState() throws IOException {
        Map<String, Map<String, Object>> metadata = new TreeMap<>();
        for (Map<String, Object> property : PropertyReferenceMatchesTheConfigurationMetadataTest.readProperties()) {
            metadata.put((String) property.get("name"), property);
        }
        List<String> problems = new ArrayList<>();
        for (Path doc : docs()) {
            check(doc, Files.readAllLines(doc, StandardCharsets.UTF_8), metadata, problems);
        }
        assertThat(problems)
                .as("Property names or defaults in the docs that the configuration metadata does not have "
                        + "(fix the doc, or the property's Javadoc/default and then docs/properties.md); the rule is "
                        + "in this test's Javadoc")
                .isEmpty();
    }

    /** The rule itself, on a made-up doc: what it must catch and what it must let pass. */
    @Test
    void theRuleCatchesAMadeUpPropertyAndAWrongDefault() throws IOException {
        Map<String, Map<String, Object>> metadata = new TreeMap<>();
        for (Map<String, Object> property : PropertyReferenceMatchesTheConfigurationMetadataTest.readProperties()) {
            metadata.put((String) property.get("name"), property);
        }
        Path doc = PropertyReferenceMatchesTheConfigurationMetadataTest.repositoryRoot().resolve("docs/made-up.md");
        List<String> problems = new ArrayList<>();
        check(doc, List.of(
                "Set `distlock.made-up-timeout`, or `distlock.redis.` and `distlock.redis.retry-*`, in io.github.distlock.spi.",
                "`distlock.health.timeout` (default `5s`) and `distlock.wait-time` (default `0`).",
                "```yaml",
                "distlock:",
                "  watchdog-timeout: 10s   # default",
                "  wait-time: 0s           # default: fail at once",
                "  redis:",
                "    retry-attempts: 1     # unset (the default): Redisson's own",
                "management.endpoint.distlock:",
                "  access: read-only       # default",
                "  acess: none",
                "```"), metadata, problems);
        assertThat(problems).containsExactly(
                "docs/made-up.md:1: `distlock.made-up-timeout` is no property of the configuration metadata",
                "docs/made-up.md:2: `distlock.health.timeout` has the default `2s` in the metadata, the doc says `5s`",
                "docs/made-up.md:5: `distlock.watchdog-timeout` has the default `30s` in the metadata, the doc says `10s`",
                "docs/made-up.md:10: `management.endpoint.distlock.access` has the default `unrestricted` in the "
                        + "metadata, the doc says `read-only`",
                "docs/made-up.md:11: `management.endpoint.distlock.acess` is no property of the configuration metadata");
    }

    /** README.md, CONTRIBUTING.md and docs/*.md. */
    static List<Path> docs() throws IOException {
        Path root = PropertyReferenceMatchesTheConfigurationMetadataTest.repositoryRoot();
        List<Path> docs = new ArrayList<>(List.of(root.resolve("README.md"), root.resolve("CONTRIBUTING.md")));
        try (Stream<Path> files = Files.list(root.resolve("docs"))) {
            files.filter(f -> f.getFileName().toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        return docs;
    }

    static void check(Path doc, List<String> lines, Map<String, Map<String, Object>> metadata, List<String> problems) {
        String file = PropertyReferenceMatchesTheConfigurationMetadataTest.repositoryRoot().relativize(doc).toString();
        String block = null;
        Deque<String[]> yamlParents = new ArrayDeque<>(); // {indent, key}
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            String where = file + ":" + (i + 1);
            Matcher fence = FENCE.matcher(line);
            if (fence.matches()) {
                block = (block == null) ? fence.group(1).toLowerCase(Locale.ROOT) : null;
                yamlParents.clear();
                continue;
            }
            checkNames(where, line, metadata, problems);
            checkProseDefaults(where, line, metadata, problems);
            if ("yaml".equals(block) || "yml".equals(block)) {
                checkYamlLine(where, line, yamlParents, metadata, problems);
            }
            else if ("properties".equals(block)) {
                Matcher key = PROPERTIES_KEY.matcher(line);
                if (!line.strip().startsWith("#") && key.matches()) {
                    checkName(where, key.group(1), false, metadata, problems);
                }
            }
        }
    }

    private static void checkNames(String where, String line, Map<String, Map<String, Object>> metadata,
            List<String> problems) {
        Matcher name = NAME.matcher(line);
        while (name.find()) {
            checkName(where, name.group(1), name.group(2) != null, metadata, problems);
        }
    }

    /** A name of ours must be a property, or (a family written with {@code *}, or a group) a prefix of one. */
    private static void checkName(String where, String name, boolean family, Map<String, Map<String, Object>> metadata,
            List<String> problems) {
        if (!OURS.matcher(name).matches() || NOT_PROPERTIES.contains(name) || name.startsWith(GENERATED_TESTS)) {
            return;
        }
        if (metadata.containsKey(name)) {
            return;
        }
        String prefix = family ? name : name + ".";
        if (metadata.keySet().stream().anyMatch(property -> property.startsWith(prefix))) {
            return;
        }
        problems.add(where + ": `" + name + (family ? "*" : "") + "` is no property of the configuration metadata");
    }

    private static void checkProseDefaults(String where, String line, Map<String, Map<String, Object>> metadata,
            List<String> problems) {
        Matcher stated = PROSE_DEFAULT.matcher(line);
        while (stated.find()) {
            checkDefault(where, stated.group(1), stated.group(2), metadata, problems);
        }
    }

    private static void checkYamlLine(String where, String line, Deque<String[]> parents,
            Map<String, Map<String, Object>> metadata, List<String> problems) {
        if (line.strip().equals("---")) {
            parents.clear();
            return;
        }
        Matcher key = YAML_KEY.matcher(line);
        if (line.isBlank() || line.strip().startsWith("#") || line.strip().startsWith("-") || !key.matches()) {
            return;
        }
        int indent = key.group(1).length();
        while (!parents.isEmpty() && Integer.parseInt(parents.peek()[0]) >= indent) {
            parents.pop();
        }
        StringBuilder name = new StringBuilder();
        parents.descendingIterator().forEachRemaining(parent -> name.append(parent[1]).append('.'));
        name.append(key.group(2));
        String rest = (key.group(3) != null) ? key.group(3) : "";
        int hash = comment(rest);
        String value = ((hash < 0) ? rest : rest.substring(0, hash)).strip();
        String comment = (hash < 0) ? "" : rest.substring(hash + 1).strip();
        if (value.isEmpty()) {
            parents.push(new String[] { String.valueOf(indent), key.group(2) });
            return;
        }
        checkName(where, name.toString(), false, metadata, problems);
        if (OURS.matcher(name).matches() && comment.toLowerCase(Locale.ROOT).startsWith("default")) {
            checkDefault(where, name.toString(), value, metadata, problems);
        }
    }

    /** Where a YAML comment starts: a {@code #} after white space, outside quotes; -1 if none. */
    private static int comment(String rest) {
        char quote = 0;
        for (int i = 0; i < rest.length(); i++) {
            char c = rest.charAt(i);
            if (quote != 0) {
                quote = (c == quote) ? 0 : quote;
            }
            else if (c == '"' || c == '\'') {
                quote = c;
            }
            else if (c == '#' && (i == 0 || Character.isWhitespace(rest.charAt(i - 1)))) {
                return i;
            }
        }
        return -1;
    }

    private static void checkDefault(String where, String name, String stated, Map<String, Map<String, Object>> metadata,
            List<String> problems) {
        Map<String, Object> property = metadata.get(name);
        String value = unquote(stated);
        if (property == null || property.get("defaultValue") == null || OURS.matcher(value).matches()) {
            return; // not a property (reported by the name check), or nothing to check against
        }
        Object expected = property.get("defaultValue");
        String expectedText = (expected instanceof Collection<?> values)
                ? String.join(",", values.stream().map(String::valueOf).toList()) : String.valueOf(expected);
        if (!sameValue(String.valueOf(property.get("type")), value, expectedText)) {
            problems.add(where + ": `" + name + "` has the default `" + expectedText + "` in the metadata, the doc says `"
                    + value + "`");
        }
    }

    static boolean sameValue(String type, String stated, String expected) {
        if (Duration.class.getName().equals(type)) {
            try {
                return DurationStyle.detectAndParse(stated).equals(DurationStyle.detectAndParse(expected));
            }
            catch (IllegalArgumentException notADuration) {
                return false;
            }
        }
        return normalized(stated).equals(normalized(expected));
    }

    private static String normalized(String value) {
        return value.replace('-', '_').replace(" ", "").toLowerCase(Locale.ROOT);
    }

    private static String unquote(String value) {
        String v = value.strip();
        if (v.length() >= 2 && (v.startsWith("\"") && v.endsWith("\"") || v.startsWith("'") && v.endsWith("'"))) {
            return v.substring(1, v.length() - 1);
        }
        return v;
    }
}
