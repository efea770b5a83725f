package io.github.distlock.aop;

import java.lang.reflect.Method;

/**
 * The root object of a key expression: {@code #root.methodName}, {@code #root.args}, {@code #root.target}...
 */
public final class LockExpressionRoot {

    private final Method method;
    private final Object[] args;
    private final Object target;
    private final Class<?> targetClass;

    LockExpressionRoot(Method method, Object[] args, Object target, Class<?> targetClass) {
        this.method = method;
        this.args = args;
        this.target = target;
        this.targetClass = targetClass;
    }

    /** The annotated method. */
    public Method getMethod() {
        return method;
    }

    /** The annotated method's name. */
    public String getMethodName() {
        return method.getName();
    }

    /** The call's arguments. */
    public Object[] getArgs() {
        return args;
    }

    /** The bean the method is called on. */
    public Object getTarget() {
        return target;
    }

    /** The class of the bean the method is called on. */
    public Class<?> getTargetClass() {
        return targetClass;
    }
}
