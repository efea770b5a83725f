package io.github.distlock.cache;

import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.github.distlock.DistlockConfigurationException;
import io.github.distlock.LockTemplate;
import org.aopalliance.intercept.MethodInterceptor;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.aop.framework.AopConfigException;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.cache.Cache;
import org.springframework.cache.CacheManager;
import org.springframework.cache.support.NoOpCache;
import org.springframework.util.ClassUtils;
import org.springframework.util.function.SingletonSupplier;

/**
 * Makes every {@link CacheManager} bean hand out {@link SingleFlightCache}s, so that each missing entry is loaded
 * under its distributed lock. The bean keeps its class (a class proxy whose {@code getCache} decorates the cache it
 * returns; an interface proxy when the class is final), so that it is still injected by its own type. Caches that
 * store nothing ({@link NoOpCache}) are left as they are.
 *
 * <p>Registered by the auto-configuration when {@code distlock.cache.single-flight.enabled} is {@code true}; fails the
 * startup when there is then no {@link LockTemplate} (no lock backend), rather than let caches load without a lock.
 */
public final class SingleFlightCacheManagerPostProcessor implements BeanPostProcessor, SmartInitializingSingleton {

    private static final Log logger = LogFactory.getLog(SingleFlightCacheManagerPostProcessor.class);

    private final ObjectProvider<LockTemplate> lockTemplate;

    private final SingletonSupplier<LockTemplate> locks;

    private final Duration waitTime;

    private final List<String> decorated = new ArrayList<>();

    /**
     * @param lockTemplate the lock template, looked up when a cache first loads an entry
     * @param waitTime how long a caller waits for another caller's load ({@code distlock.cache.single-flight.wait-time})
     */
    public SingleFlightCacheManagerPostProcessor(ObjectProvider<LockTemplate> lockTemplate, Duration waitTime) {
        this.lockTemplate = lockTemplate;
        this.locks = SingletonSupplier.of(lockTemplate::getObject);
        this.waitTime = waitTime;
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        if (!(bean instanceof CacheManager manager) || bean instanceof SingleFlightCacheManager) {
            return bean;
        }
        Map<String, SingleFlightCache> caches = new ConcurrentHashMap<>();
        MethodInterceptor decorateCaches = invocation -> {
            Object result = invocation.proceed();
            if (result instanceof Cache cache && "getCache".equals(invocation.getMethod().getName())) {
                return decorate(caches, cache);
            }
            return result;
        };
        ProxyFactory factory = new ProxyFactory(manager);
        factory.addInterface(SingleFlightCacheManager.class);
        factory.addAdvice(decorateCaches);
        factory.setProxyTargetClass(!Modifier.isFinal(manager.getClass().getModifiers()));
        Object proxy;
        try {
            proxy = factory.getProxy(ClassUtils.getDefaultClassLoader());
        }
        catch (AopConfigException | IllegalArgumentException | IllegalStateException ex) {
            // a class CGLIB cannot extend: the bean is then injected as a CacheManager (and its other interfaces) only
            logger.debug("Cache manager '" + beanName + "' proxied by its interfaces: " + ex);
            factory.setProxyTargetClass(false);
            factory.setInterfaces(ClassUtils.getAllInterfaces(manager));
            factory.addInterface(SingleFlightCacheManager.class);
            proxy = factory.getProxy(ClassUtils.getDefaultClassLoader());
        }
        synchronized (decorated) {
            decorated.add(beanName);
        }
        return proxy;
    }

    private Cache decorate(Map<String, SingleFlightCache> caches, Cache cache) {
        if (cache instanceof SingleFlightCache || cache instanceof NoOpCache) {
            return cache;
        }
        // one decorator per cache, made again only when the manager hands out another instance under the name
        return caches.compute(cache.getName(), (name, known) -> (known != null && known.getDelegate() == cache) ? known
                : new SingleFlightCache(cache, locks, waitTime));
    }

    @Override
    public void afterSingletonsInstantiated() {
        List<String> names;
        synchronized (decorated) {
            names = List.copyOf(decorated);
        }
        if (names.isEmpty()) {
            return;
        }
        if (lockTemplate.getIfAvailable() == null) {
            throw new DistlockConfigurationException("distlock.cache.single-flight.enabled=true, but there is no "
                    + "lock backend (no LockTemplate bean) to load the entries of the cache managers " + names
                    + " under.", "Configure a lock backend (spring.data.redis.*, distlock.jdbc, distlock.zookeeper, "
                    + "distlock.etcd), or set distlock.cache.single-flight.enabled=false.", null);
        }
        logger.info("Caches of " + names + " load a missing entry once across instances, under its distributed lock "
                + "(distlock.cache.single-flight.wait-time " + waitTime + ")");
    }

    /** Marks a cache manager whose caches are already single-flight. */
    public interface SingleFlightCacheManager {
    }
}
