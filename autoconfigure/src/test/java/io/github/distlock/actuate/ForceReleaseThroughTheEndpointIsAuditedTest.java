package io.github.distlock.actuate;

import java.security.Principal;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import io.github.distlock.LockTemplate;
import io.github.distlock.autoconfigure.DistlockActuatorAutoConfiguration;
import io.github.distlock.autoconfigure.DistlockAutoConfiguration;
import io.github.distlock.autoconfigure.DistlockProperties;
import io.github.distlock.spi.LockProvider;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.audit.AuditEvent;
import org.springframework.boot.actuate.audit.AuditEventRepository;
import org.springframework.boot.actuate.audit.InMemoryAuditEventRepository;
import org.springframework.boot.actuate.audit.listener.AuditListener;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The endpoint names an owner one way everywhere (this instance's list, the key view, what a force release takes), and
 * every force release through it, whatever its outcome, lands in the application's {@link AuditEventRepository}
 * through Spring Boot's own audit listener, with who asked, the key and the owner.
 */
class ForceReleaseThroughTheEndpointIsAuditedTest {

    /**
     * Boot's own {@link AuditListener} over an in-memory repository, as Boot's audit auto-configuration declares it;
     * that auto-configuration itself also declares Spring Security's audit listeners, which need Spring Security on
     * the class path.
     */
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DistlockAutoConfiguration.class,
                    DistlockActuatorAutoConfiguration.class))
            .withBean(LockProvider.class, OneInstanceInspectingProvider::new)
            .withUserConfiguration(Audit.class)
            .withPropertyValues("management.endpoints.web.exposure.include=distlock");

    @Test
    void theListNamesTheOwnerAsTheKeyViewDoesAndAReleaseByThatOwnerIsAuditedWithThePrincipal() {
        runner.withPropertyValues("distlock.actuator.force-release-enabled=true",
                "management.endpoint.distlock.show-values=always").run(context -> {
            DistlockEndpoint endpoint = context.getBean(DistlockEndpoint.class);
            String fullKey = fullKey(context, "order:1");
            AtomicReference<String> named = new AtomicReference<>();
            AtomicReference<DistlockEndpoint.ForceReleaseDescriptor> released = new AtomicReference<>();
            context.getBean(LockTemplate.class).run("order:1", () -> {
                String listed = endpoint.locks(SecurityContext.NONE).held().get(0).owner();
                String looked = endpoint.lock(SecurityContext.NONE, new String[] {"order:1"}).holders().get(0).owner();
                assertThat(listed).isEqualTo(looked).startsWith(OneInstanceInspectingProvider.INSTANCE_ID + ":");
                named.set(listed);
                released.set(endpoint.forceRelease(as("ops-alice"), new String[] {"order:1"}, " " + listed + " "));
            });
            assertThat(released.get().released()).isTrue();
            assertThat(released.get().evicted()).extracting(DistlockEndpoint.HolderDescriptor::owner)
                    .containsExactly(named.get());
            List<AuditEvent> events = audit(context).find("ops-alice", null,
                    DistlockEndpoint.FORCE_RELEASE_AUDIT_TYPE);
            assertThat(events).singleElement().satisfies(event -> assertThat(event.getData())
                    .containsEntry("key", fullKey).containsEntry("keyHash", sha256Prefix(fullKey))
                    .containsEntry("expectedOwner", named.get()).containsEntry("outcome", "released").containsEntry("released", true)
                    .containsEntry("evicted", List.of(named.get())).doesNotContainKey("holders"));
        });
    }

    @Test
    void aRefusedReleaseAKeyNobodyHeldAndADisabledReleaseAreAuditedTooAnonymousWhenNobodySignedIn() {
        runner.withPropertyValues("distlock.actuator.force-release-enabled=true").run(context -> {
            DistlockEndpointWebExtension web = context.getBean(DistlockEndpointWebExtension.class);
            String fullKey = fullKey(context, "order:2");
            AtomicReference<String> holder = new AtomicReference<>();
            context.getBean(LockTemplate.class).run("order:2", () -> {
                holder.set(context.getBean(DistlockEndpoint.class).locks(SecurityContext.NONE).held().get(0).owner());
                assertThat(web.forceRelease(SecurityContext.NONE, new String[] {"order:2"}, "node-2:7").getStatus())
                        .isEqualTo(409);
            });
            assertThat(web.forceRelease(SecurityContext.NONE, new String[] {"order:2"}, null).getBody().released())
                    .isFalse();
            List<AuditEvent> events = audit(context).find(DistlockEndpoint.ANONYMOUS, null,
                    DistlockEndpoint.FORCE_RELEASE_AUDIT_TYPE);
            assertThat(events).hasSize(2);
            // keys are masked by default (show-values: never), in the audit trail as in the answers
            assertThat(events.get(0).getData()).containsEntry("key", DistlockEndpoint.MASK)
                    .containsEntry("keyHash", sha256Prefix(fullKey)).containsEntry("expectedOwner", "node-2:7")
                    .containsEntry("outcome", "refused").containsEntry("released", false)
                    .containsEntry("evicted", List.of()).containsEntry("holders", List.of(holder.get()));
            assertThat(events.get(1).getData()).containsEntry("key", DistlockEndpoint.MASK)
                    .containsEntry("keyHash", sha256Prefix(fullKey)).doesNotContainKey("expectedOwner")
                    .containsEntry("outcome", "not-held").containsEntry("released", false);
        });
        runner.run(context -> {
            assertThat(context.getBean(DistlockEndpointWebExtension.class)
                    .forceRelease(as("mallory"), new String[] {"order:3"}, null).getStatus()).isEqualTo(403);
            assertThat(audit(context).find("mallory", null, DistlockEndpoint.FORCE_RELEASE_AUDIT_TYPE))
                    .singleElement().satisfies(event -> assertThat(event.getData())
                            .containsEntry("keyHash", sha256Prefix(fullKey(context, "order:3")))
                            .containsEntry("outcome", "disabled")
                            .containsEntry("released", false));
        });
    }

    /**
     * An owner that cannot be one as the key view names it is a bad request, and nothing is released: an empty one
     * (a script's unset variable) would otherwise evict every holder, and a long or multi-line one would forge log
     * lines. A bare number matches no holder: refused (409), saying how owners are named.
     */
    @Test
    void anEmptyLongOrMultiLineOwnerIsABadRequestAndABareIdMatchesNoHolder() {
        runner.withPropertyValues("distlock.actuator.force-release-enabled=true").run(context -> {
            DistlockEndpoint endpoint = context.getBean(DistlockEndpoint.class);
            context.getBean(LockTemplate.class).run("order:4", () -> {
                String listed = endpoint.locks(SecurityContext.NONE).held().get(0).owner();
                String bare = listed.substring(listed.indexOf(':') + 1);
                String[] key = {"order:4"};
                assertThatThrownBy(() -> endpoint.forceRelease(SecurityContext.NONE, key, " "))
                        .isInstanceOf(InvalidEndpointRequestException.class)
                        .hasMessageStartingWith("The owner is empty: give the owner as GET /actuator/distlock/{key} "
                                + "names it (<instance id>:<owner id>), or leave the parameter out");
                DistlockEndpoint.ForceReleaseDescriptor byBareId = endpoint.forceRelease(SecurityContext.NONE, key, bare);
                assertThat(byBareId.released()).isFalse();
                assertThat(byBareId.note()).endsWith("a bare owner id names no instance: give the owner as GET "
                        + "/actuator/distlock/{key} names it (<instance id>:<owner id>)");
                assertThatThrownBy(() -> endpoint.forceRelease(SecurityContext.NONE, key, "a".repeat(257)))
                        .isInstanceOf(InvalidEndpointRequestException.class)
                        .hasMessageStartingWith("The owner is 257 characters long, at most 256 are allowed");
                for (String lineBreak : List.of("\n", "\u2028", "\u202e")) {
                    assertThatThrownBy(() -> endpoint.forceRelease(SecurityContext.NONE, key,
                            listed + lineBreak + "Fake log line"))
                            .isInstanceOf(InvalidEndpointRequestException.class)
                            .hasMessageStartingWith("The owner contains control characters");
                }
                assertThat(endpoint.lock(SecurityContext.NONE, key).holders()).as("still held")
                        .extracting(DistlockEndpoint.HolderDescriptor::owner).containsExactly(listed);
            });
            assertThat(audit(context).find(null, null, DistlockEndpoint.FORCE_RELEASE_AUDIT_TYPE))
                    .as("only the bare id's refusal was an attempt").extracting(event -> event.getData().get("outcome"))
                    .containsExactly("refused");
        });
    }

    private static String sha256Prefix(String key) {
        try {
            byte[] digest = java.security.MessageDigest.getInstance("SHA-256")
                    .digest(key.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return java.util.HexFormat.of().formatHex(digest).substring(0, 16);
        }
        catch (java.security.NoSuchAlgorithmException ex) {
            throw new AssertionError(ex);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Audit {

        @Bean
        InMemoryAuditEventRepository auditEventRepository() {
            return new InMemoryAuditEventRepository();
        }

        @Bean
        AuditListener auditListener(AuditEventRepository repository) {
            return new AuditListener(repository);
        }
    }

    private static String fullKey(AssertableApplicationContext context, String key) {
        return context.getBean(DistlockProperties.class).getKeyPrefix() + key;
    }

    private static AuditEventRepository audit(AssertableApplicationContext context) {
        return context.getBean(AuditEventRepository.class);
    }

    private static SecurityContext as(String name) {
        Principal principal = () -> name;
        return new SecurityContext() {
            @Override
            public Principal getPrincipal() {
                return principal;
            }

            @Override
            public boolean isUserInRole(String role) {
                return false;
            }
        };
    }
}
