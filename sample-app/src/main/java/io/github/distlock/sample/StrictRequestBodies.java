package io.github.distlock.sample;

import java.util.List;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.MediaType;
import org.springframework.http.converter.HttpMessageConverters;
import org.springframework.http.converter.json.JacksonJsonHttpMessageConverter;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * Reads the shop's own request bodies strictly: a field the request does not have ({@code "coupon": "X"}) and a
 * decimal where a whole number belongs ({@code "quantity": 1.5}) fail the read and become a 400 naming the field,
 * instead of being dropped or truncated (Jackson, as Spring Boot configures it, ignores unknown fields and reads 1.5
 * as 1). Only the types in {@link #TYPES} get the strict mapper; every other body, Actuator's included, is read with
 * the application's {@link JsonMapper} as before.
 */
@Configuration(proxyBeanMethods = false)
class StrictRequestBodies implements WebMvcConfigurer {

    /** The request bodies of this API: those the strict mapper reads. */
    static final List<Class<?>> TYPES = List.of(OrderRequest.class, NewProductRequest.class, RestockRequest.class);

    private final StrictMapper strict;

    StrictRequestBodies(StrictMapper strict) {
        this.strict = strict;
    }

    /** The application's mapper with the two strict features; {@link RequestBodyFields} checks fields with it too. */
    @Bean
    static StrictMapper strictRequestMapper(JsonMapper json) {
        return new StrictMapper(json.rebuild()
                .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
                .build());
    }

    @Override
    public void configureMessageConverters(HttpMessageConverters.ServerBuilder builder) {
        builder.configureMessageConverters(converter -> {
            if (converter instanceof JacksonJsonHttpMessageConverter jackson) {
                for (Class<?> type : TYPES) {
                    jackson.registerMappersForType(type, mappers -> {
                        mappers.put(MediaType.APPLICATION_JSON, strict.mapper());
                        mappers.put(new MediaType("application", "*+json"), strict.mapper());
                    });
                }
            }
        });
    }

    /**
     * The strict mapper, wrapped so that it is not a second {@link JsonMapper} bean (Spring Boot's own would back off
     * or clash with it).
     *
     * @param mapper the application's mapper, failing on unknown fields and on decimals read into whole numbers
     */
    record StrictMapper(JsonMapper mapper) {
    }
}
