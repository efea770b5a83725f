package io.github.distlock.sample;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code docs/properties.md} is rendered from the configuration metadata every distlock module ships, so the reference
 * cannot drift from the code. The sample has every backend and idempotency on its test class path, so every
 * {@code distlock.*} property is in one of the {@code META-INF/spring-configuration-metadata.json} files it sees.
 * Run with {@code -Ddistlock.docs.regenerate=true} to write the file instead of comparing it.
 */
class PropertyReferenceMatchesTheConfigurationMetadataTest {

    private static final String REGENERATE = "distlock.docs.regenerate";

    private static final String HOW_TO_REGENERATE = "./mvnw -pl sample-app -am test "
            + "-Dtest=PropertyReferenceMatchesTheConfigurationMetadataTest -Dsurefire.failIfNoSpecifiedTests=false -D"
            + REGENERATE + "=true";

    /** Properties of distlock, also those it adds under Actuator's {@code management.*} namespace. */
    private static final Pattern OURS = Pattern.compile("^(distlock\\.|management\\.(endpoint|health)\\.distlock\\.).*");

    /** Package names in a type: the reference shows {@code Duration}, not {@code java.time.Duration}. */
    private static final Pattern PACKAGE = Pattern.compile("\\b(?:[a-z_][a-z0-9_]*\\.)+(?=[A-Z])");

    @Test
    void thePropertyReferenceIsTheOneTheMetadataRenders() throws IOException {
        String rendered = render(readProperties());
        Path file = repositoryRoot().resolve("docs").resolve("properties.md");
        if (Boolean.getBoolean(REGENERATE)) {
            Files.writeString(file, rendered, StandardCharsets.UTF_8);
            return;
        }
        String committed = Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
        assertThat(committed)
                .as("docs/properties.md differs from the configuration metadata; regenerate it with%n  %s%n"
                        + "and commit the result", HOW_TO_REGENERATE)
                .isEqualTo(rendered);
    }

    /** Every property of ours in every metadata file on the class path, by name (first description wins). */
    @SuppressWarnings("unchecked")
    static Collection<Map<String, Object>> readProperties() throws IOException {
        JsonMapper json = JsonMapper.builder().build();
        Map<String, Map<String, Object>> byName = new TreeMap<>();
        Enumeration<URL> files = PropertyReferenceMatchesTheConfigurationMetadataTest.class.getClassLoader()
                .getResources("META-INF/spring-configuration-metadata.json");
        while (files.hasMoreElements()) {
            try (InputStream in = files.nextElement().openStream()) {
                Map<String, Object> metadata = json.readValue(in, Map.class);
                for (Map<String, Object> property : (List<Map<String, Object>>) metadata.getOrDefault("properties",
                        List.of())) {
                    String name = (String) property.get("name");
                    if (OURS.matcher(name).matches()) {
                        byName.merge(name, property, (first, second) -> {
                            second.forEach(first::putIfAbsent);
                            return first;
                        });
                    }
                }
            }
        }
        assertThat(byName).as("distlock properties in the configuration metadata on the class path").isNotEmpty();
        return byName.values();
    }

    private static String render(Collection<Map<String, Object>> properties) {
        StringBuilder out = new StringBuilder();
        out.append("# Configuration properties\n\n")
                .append("For whoever configures an application that uses distlock: every property it reads, with its type, ")
                .append("default and meaning.\n\n")
                .append("This page is generated from the configuration metadata of the distlock modules (the Javadoc of ")
                .append("their `@ConfigurationProperties` classes) by `PropertyReferenceMatchesTheConfigurationMetadataTest` ")
                .append("in `sample-app`, which fails when it differs. Do not edit it by hand: change the Javadoc, then\n\n")
                .append("```bash\n").append(HOW_TO_REGENERATE).append("\n```\n\n")
                .append("A property of a backend module is read only when that module is on the class path. Durations ")
                .append("take Spring Boot's forms (`500ms`, `2s`, `PT2S`; a bare number is in milliseconds unless ")
                .append("stated): see [durations.md](durations.md).\n\n")
                .append("| property | type | default | description |\n")
                .append("|---|---|---|---|\n");
        for (Map<String, Object> property : properties) {
            out.append("| `").append(property.get("name")).append("` | ")
                    .append(cell(type(property.get("type")))).append(" | ")
                    .append(cell(defaultValue(property.get("defaultValue")))).append(" | ")
                    .append(cell(description(property))).append(" |\n");
        }
        return out.toString();
    }

    private static String type(Object type) {
        return (type == null) ? "" : "`" + PACKAGE.matcher(type.toString()).replaceAll("").replace('$', '.') + "`";
    }

    private static String defaultValue(Object value) {
        if (value == null) {
            return "";
        }
        if (value instanceof Collection<?> values) {
            List<String> parts = new ArrayList<>();
            values.forEach(v -> parts.add(String.valueOf(v)));
            return "`" + String.join(", ", parts) + "`";
        }
        return "`" + value + "`";
    }

    @SuppressWarnings("unchecked")
    private static String description(Map<String, Object> property) {
        String description = Objects.toString(property.get("description"), "");
        Object deprecation = property.get("deprecation");
        if (deprecation instanceof Map<?, ?> details || Boolean.TRUE.equals(property.get("deprecated"))) {
            Map<String, Object> d = (deprecation instanceof Map<?, ?>) ? (Map<String, Object>) deprecation : Map.of();
            StringBuilder note = new StringBuilder("**Deprecated**");
            if (d.get("since") != null) {
                note.append(" since ").append(d.get("since"));
            }
            if (d.get("replacement") != null) {
                note.append(": use `").append(d.get("replacement")).append("`");
            }
            if (d.get("reason") != null) {
                note.append(". ").append(d.get("reason"));
            }
            description = note.append(description.isEmpty() ? "" : ". " + description).toString();
        }
        return description;
    }

    /** Javadoc's inline tags, which the metadata keeps as written. */
    private static final Pattern INLINE_TAG = Pattern.compile("\\{@(?:code|literal|link|linkplain) +#?([^}]*)}");

    /** One table cell: one line, Javadoc's inline tags as markdown, and a pipe that does not end the cell. */
    private static String cell(String text) {
        String markdown = INLINE_TAG.matcher(text).replaceAll(match -> java.util.regex.Matcher.quoteReplacement("`" + match.group(1).strip() + "`"));
        return markdown.replaceAll("\\s*\\R\\s*", " ").replace("|", "\\|").strip();
    }

    /** The clone's root (where docs/ is), from the module directory Maven runs the test in. */
    static Path repositoryRoot() {
        Path dir = Path.of("").toAbsolutePath();
        for (Path candidate = dir; candidate != null; candidate = candidate.getParent()) {
            if (Files.isDirectory(candidate.resolve("docs")) && Files.exists(candidate.resolve("mvnw"))) {
                return candidate;
            }
        }
        throw new IllegalStateException("No docs/ directory above " + dir);
    }
}
