package io.github.distlock.aop;

import java.lang.reflect.Array;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;

import org.springframework.expression.BeanResolver;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.MethodResolver;
import org.springframework.expression.PropertyAccessor;
import org.springframework.expression.TypedValue;
import org.springframework.expression.spel.ExpressionState;
import org.springframework.expression.spel.SpelNode;
import org.springframework.expression.spel.SpelParserConfiguration;
import org.springframework.expression.spel.ast.InlineList;
import org.springframework.expression.spel.ast.OpPlus;
import org.springframework.expression.spel.ast.StringLiteral;
import org.springframework.expression.spel.ast.VariableReference;
import org.springframework.expression.spel.standard.SpelExpression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.ReflectiveMethodResolver;
import org.springframework.expression.spel.support.ReflectivePropertyAccessor;
import org.springframework.expression.spel.support.StandardEvaluationContext;

/**
 * A key expression of one annotated method, parsed once and evaluated per call: the one evaluator of every annotation
 * of distlock's modules that names a key ({@link io.github.distlock.DistributedLock}, {@code @Idempotent}), so they
 * share one grammar and one set of checks.
 *
 * <p>A top-level {@code +} chain is split into its parts so that a part evaluating to {@code null} or blank is caught
 * (SpEL itself would turn {@code 'order:' + null} into {@code "order:null"}, silently one lock for everybody); the
 * parts' values are joined as text. Variables are checked against the method's parameters at parse time, which is
 * also where a build without {@code -parameters} shows up.
 *
 * <p>Internal API of distlock's modules, made by {@link AbstractOperationSource}: not for applications.
 */
public final class LockKeyExpression {

    private static final SpelExpressionParser PARSER = new SpelExpressionParser();
    private static final SpelParserConfiguration CONFIGURATION = new SpelParserConfiguration();

    // shared so their reflection caches survive across calls; both are thread-safe
    private static final List<PropertyAccessor> PROPERTY_ACCESSORS = List.of(new ReflectivePropertyAccessor());
    private static final List<MethodResolver> METHOD_RESOLVERS = List.of(new ReflectiveMethodResolver());

    private final String source;
    /** What a failure at a call names first: the annotation and the method, "@DistributedLock on a.B.m()". */
    private final String owner;
    private final Method method;
    /** The parts of each key: one key for a plain expression, one per element of a top-level inline list. */
    private final SpelNode[][] keys;
    private final boolean inlineList;
    /**
     * Per part of {@link #keys}: the index of the parameter a part such as {@code #id} names, {@link #LITERAL} for a
     * string literal, {@link #SPEL} for anything else. Literals and parameters are read without SpEL (same values),
     * and a key made only of them builds no evaluation context at all.
     */
    private final int[][] sources;
    /** Per part of {@link #keys}: the text of a string literal, or {@code null}. */
    private final String[][] literals;
    /** Whether some part needs SpEL to evaluate. */
    private final boolean needsSpel;
    private final Map<String, Integer> parameterIndex;
    private final BeanResolver beanResolver;

    /** In {@link #sources}: a string literal. */
    private static final int LITERAL = -1;
    /** In {@link #sources}: evaluated by SpEL. */
    private static final int SPEL = -2;

    private LockKeyExpression(String source, String owner, Method method, SpelNode[][] keys, boolean inlineList,
            Map<String, Integer> parameterIndex, BeanResolver beanResolver) {
        this.source = source;
        this.owner = owner;
        this.method = method;
        this.keys = keys;
        this.inlineList = inlineList;
        this.parameterIndex = parameterIndex;
        this.sources = new int[keys.length][];
        this.literals = new String[keys.length][];
        boolean spel = false;
        for (int k = 0; k < keys.length; k++) {
            sources[k] = new int[keys[k].length];
            literals[k] = new String[keys[k].length];
            for (int i = 0; i < keys[k].length; i++) {
                SpelNode part = keys[k][i];
                String variable = (part instanceof VariableReference) ? part.toStringAST().substring(1) : null;
                // #root and #this are SpEL's own, whatever the parameters are called
                Integer parameter = (variable != null && !variable.equals("root") && !variable.equals("this"))
                        ? parameterIndex.get(variable) : null;
                if (part instanceof StringLiteral literal && literal.getLiteralValue().getValue() instanceof String text) {
                    sources[k][i] = LITERAL;
                    literals[k][i] = text;
                }
                else if (parameter != null) {
                    sources[k][i] = parameter;
                }
                else {
                    sources[k][i] = SPEL;
                    spel = true;
                }
            }
        }
        this.needsSpel = spel;
        this.beanResolver = beanResolver;
    }

    /**
     * Parses {@code expression} for {@code method} called on {@code targetClass} (may be {@code null}).
     *
     * @param owner the annotation and the method, as a failure at a call names them
     * @param parameterNames the method's parameter names, or {@code null} when they are not known
     * @throws InvalidAnnotationException on a syntax error or a variable the method does not have, with a message
     * that names neither the method (the caller adds it) nor more than the expression
     */
    static LockKeyExpression parse(String expression, String owner, Method method, Class<?> targetClass,
            String[] parameterNames, BeanResolver beanResolver) {
        if (expression == null || expression.isBlank()) {
            throw new InvalidAnnotationException("key must not be empty", "Give the annotation a key, e.g. key = \"'order:' + #orderId\"");
        }
        SpelExpression parsed;
        try {
            parsed = PARSER.parseRaw(expression);
        }
        catch (RuntimeException ex) {
            throw new InvalidAnnotationException("key '" + expression + "' is not a valid SpEL expression: " + ex.getMessage(), "Fix the key expression at the position named above; string literals go in single quotes: 'order:' + #id", ex);
        }
        Map<String, Integer> index = parameterIndex(method, parameterNames);
        checkVariables(parsed.getAST(), expression, index, parameterNames);
        SpelNode ast = parsed.getAST();
        boolean inlineList = ast instanceof InlineList;
        SpelNode[][] keys = new SpelNode[inlineList ? ast.getChildCount() : 1][];
        if (inlineList && keys.length == 0) {
            throw new InvalidAnnotationException("key '" + expression + "' is an empty list: it names no lock", "Name at least one key in the list");
        }
        for (int i = 0; i < keys.length; i++) {
            keys[i] = split(inlineList ? ast.getChild(i) : ast);
            checkIdentityParts(keys[i], expression, method, index, targetClass);
        }
        return new LockKeyExpression(expression, owner, method, keys, inlineList, index, beanResolver);
    }

    /** The expression as written (placeholders resolved). */
    public String source() {
        return source;
    }

    /**
     * Evaluates the key for one call: a {@code String}, or a {@code List<String>} of several keys when the expression
     * is an inline list or its value a collection or an array.
     *
     * @throws IllegalArgumentException naming the annotation and the method, when a part or an element is null or
     * blank, or evaluation fails
     */
    public Object evaluate(Object[] args, Object target, Class<?> targetClass) {
        try {
            return evaluateKeys(args, target, targetClass);
        }
        catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException(owner + ": " + ex.getMessage(), ex);
        }
    }

    private Object evaluateKeys(Object[] args, Object target, Class<?> targetClass) {
        ExpressionState state = needsSpel ? state(args, target, targetClass) : null;
        if (inlineList) {
            List<String> all = new ArrayList<>(keys.length);
            for (int k = 0; k < keys.length; k++) {
                all.add(key(k, args, state));
            }
            return all;
        }
        SpelNode[] parts = keys[0];
        if (parts.length == 1) {
            Object value = value(0, 0, args, state);
            if (value instanceof Collection<?> || (value != null && value.getClass().isArray())) {
                return elements(parts[0], value);
            }
            return text(parts[0], value);
        }
        return key(0, args, state);
    }

    private ExpressionState state(Object[] args, Object target, Class<?> targetClass) {
        LockExpressionRoot root = new LockExpressionRoot(method, args, target, targetClass);
        StandardEvaluationContext context = new ParameterEvaluationContext(root, args, parameterIndex);
        context.setPropertyAccessors(PROPERTY_ACCESSORS);
        context.setMethodResolvers(METHOD_RESOLVERS);
        if (beanResolver != null) {
            context.setBeanResolver(beanResolver);
        }
        return new ExpressionState(context, new TypedValue(root), CONFIGURATION);
    }

    /** The value of part {@code i} of key {@code k}: a literal's text, a parameter's argument, or SpEL's value. */
    private Object value(int k, int i, Object[] args, ExpressionState state) {
        int source = sources[k][i];
        if (source >= 0) {
            return args[source];
        }
        return (source == LITERAL) ? literals[k][i] : evaluate(keys[k][i], state);
    }

    private String key(int k, Object[] args, ExpressionState state) {
        SpelNode[] parts = keys[k];
        if (parts.length == 1) {
            return text(parts[0], value(k, 0, args, state));
        }
        if (parts.length == 2) {
            // the common 'prefix:' + #id: one string, no builder
            return text(parts[0], value(k, 0, args, state)).concat(text(parts[1], value(k, 1, args, state)));
        }
        StringBuilder key = new StringBuilder(64);
        for (int i = 0; i < parts.length; i++) {
            key.append(text(parts[i], value(k, i, args, state)));
        }
        return key.toString();
    }

    /** The keys of a whole expression whose value is a collection or an array: each element checked as a key. */
    private List<String> elements(SpelNode part, Object value) {
        List<Object> elements = new ArrayList<>();
        if (value instanceof Collection<?> collection) {
            elements.addAll(collection);
        }
        else {
            for (int i = 0, n = Array.getLength(value); i < n; i++) {
                elements.add(Array.get(value, i));
            }
        }
        if (elements.isEmpty()) {
            throw new IllegalArgumentException("key '" + source + "' evaluates to an empty " + (value instanceof Collection<?>
                    ? "collection" : "array") + ": it names no lock");
        }
        List<String> keys = new ArrayList<>(elements.size());
        for (Object element : elements) {
            keys.add(text(part, element));
        }
        return keys;
    }

    private Object evaluate(SpelNode part, ExpressionState state) {
        try {
            return part.getValue(state);
        }
        catch (EvaluationException ex) {
            throw new IllegalArgumentException("key '" + source + "' could not be evaluated: " + ex.getMessage(), ex);
        }
    }

    private String text(SpelNode part, Object value) {
        String text = (value != null) ? render(part, value) : null;
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("key '" + source + "': part " + part.toStringAST() + " is "
                    + (text == null ? "null" : "blank ('" + text + "')") + "; a lock on it would be shared by every such call");
        }
        return text;
    }

    /**
     * The text of a part's value: arrays and collections by their elements (their own text is an identity, or would
     * differ per call), everything else by its {@code toString()}, which must be the class's own: the inherited
     * {@code Object.toString()} is an identity ({@code Cart@5ecddf8f}), a new lock on every call.
     */
    private String render(SpelNode part, Object value) {
        if (value instanceof CharSequence || value instanceof Number || value instanceof Boolean
                || value instanceof Character || value instanceof Enum<?>) {
            return value.toString();
        }
        if (value.getClass().isArray()) {
            StringJoiner joined = new StringJoiner(", ", "[", "]");
            for (int i = 0, n = Array.getLength(value); i < n; i++) {
                Object element = Array.get(value, i);
                joined.add((element != null) ? render(part, element) : "null");
            }
            return joined.toString();
        }
        if (value instanceof Collection<?> collection) {
            StringJoiner joined = new StringJoiner(", ", "[", "]");
            for (Object element : collection) {
                joined.add((element != null) ? render(part, element) : "null");
            }
            return joined.toString();
        }
        if (!HAS_OWN_TO_STRING.get(value.getClass())) {
            throw new IllegalArgumentException(identityMessage(source, part.toStringAST(), value.getClass())
                    + " (this call: " + value + ")");
        }
        String text = value.toString();
        // a toString() of its own can still print something inside it by identity: a record holding an array or an
        // entity without toString(), an Optional or a Map of such values
        if (text != null && IDENTITY_TEXT.matcher(text).find()) {
            throw new IllegalArgumentException("key '" + source + "': part " + part.toStringAST() + " is a "
                    + value.getClass().getName() + " whose text contains an object's identity (" + text + "), a new lock "
                    + "on every call; use properties of it that are values");
        }
        return text;
    }

    /** What Object.toString() writes: a class name (or an array's type code) and '@' and a hexadecimal hash. */
    private static final java.util.regex.Pattern IDENTITY_TEXT = java.util.regex.Pattern.compile(
            "(?:(?:[A-Za-z_$][\\w$]*\\.)+[A-Za-z_$][\\w$]*|\\[+(?:[ZBCSIJFD]|L[\\w$.]+;))@[0-9a-f]{1,8}\\b");

    private static String identityMessage(String source, String part, Class<?> type) {
        return "key '" + source + "': part " + part + " is a " + type.getName() + ", whose text is its identity, a new "
                + "lock on every call; use one of its properties (" + part + ".id) or give the class a toString()";
    }

    /** Whether a class's {@code toString()} is its own, not {@code Object}'s; computed once per class. */
    private static final ClassValue<Boolean> HAS_OWN_TO_STRING = new ClassValue<>() {
        @Override
        protected Boolean computeValue(Class<?> type) {
            try {
                return type.getMethod("toString").getDeclaringClass() != Object.class;
            }
            catch (NoSuchMethodException ex) {
                return Boolean.FALSE;
            }
        }
    };

    /**
     * Fails at startup for a part whose text is an identity whatever the call: a parameter of a final class without
     * its own {@code toString()}, or {@code #root.target} on such a bean class. (Other types are checked per call: a
     * subclass or the value may still have a {@code toString()} of its own.)
     */
    private static void checkIdentityParts(SpelNode[] parts, String expression, Method method, Map<String, Integer> index,
            Class<?> targetClass) {
        for (SpelNode part : parts) {
            if (part instanceof OpPlus && containsStringLiteral(part)) {
                throw new InvalidAnnotationException("key '" + expression + "': " + part.toStringAST() + " joins text inside "
                        + "parentheses, where a null would be written as 'null' (one lock for every such call); write the "
                        + "parts at the top level: 'a:' + #x + ':' + #y", "Write the text parts at the top level of the expression: 'a:' + #x + ':' + #y");
            }
            String text = part.toStringAST();
            Class<?> type = null;
            if (part instanceof VariableReference && index.containsKey(text.substring(1))) {
                type = method.getParameterTypes()[index.get(text.substring(1))];
            }
            else if (text.equals("#root.target") && targetClass != null) {
                type = targetClass;
            }
            boolean neverValueText = type != null && !type.isPrimitive() && !type.isArray() && !type.isInterface()
                    && (Modifier.isFinal(type.getModifiers()) || type == targetClass)
                    && !Collection.class.isAssignableFrom(type) && !HAS_OWN_TO_STRING.get(type);
            if (neverValueText) {
                throw new InvalidAnnotationException(identityMessage(expression, text, type), "Lock on a property of the object that is a value (#cart.id), or give its class a toString() that prints values");
            }
        }
    }

    private static boolean containsStringLiteral(SpelNode node) {
        if (node instanceof org.springframework.expression.spel.ast.StringLiteral) {
            return true;
        }
        if (node instanceof OpPlus) {
            for (int i = 0; i < node.getChildCount(); i++) {
                if (containsStringLiteral(node.getChild(i))) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The operands of a left-nested {@code a + b + c} chain, in order; the whole node otherwise. */
    private static SpelNode[] split(SpelNode node) {
        Deque<SpelNode> parts = new ArrayDeque<>();
        while (node instanceof OpPlus && node.getChildCount() == 2) {
            parts.addFirst(node.getChild(1));
            node = node.getChild(0);
        }
        parts.addFirst(node);
        return parts.toArray(SpelNode[]::new);
    }

    private static Map<String, Integer> parameterIndex(Method method, String[] parameterNames) {
        Map<String, Integer> index = new HashMap<>();
        for (int i = 0; i < method.getParameterCount(); i++) {
            index.put("p" + i, i);
            index.put("a" + i, i);
        }
        if (parameterNames != null) {
            for (int i = 0; i < parameterNames.length; i++) {
                index.put(parameterNames[i], i);
            }
        }
        return Map.copyOf(index);
    }

    private static void checkVariables(SpelNode ast, String expression, Map<String, Integer> index, String[] parameterNames) {
        Set<String> unknown = new LinkedHashSet<>();
        Deque<SpelNode> pending = new ArrayDeque<>(List.of(ast));
        while (!pending.isEmpty()) {
            SpelNode node = pending.pop();
            if (node instanceof VariableReference) {
                String name = node.toStringAST().substring(1);
                if (!name.equals("root") && !name.equals("this") && !index.containsKey(name)) {
                    unknown.add("#" + name);
                }
            }
            for (int i = 0; i < node.getChildCount(); i++) {
                pending.push(node.getChild(i));
            }
        }
        if (unknown.isEmpty()) {
            return;
        }
        if (parameterNames == null) {
            throw new InvalidAnnotationException("key '" + expression + "' uses " + unknown + " but the method's parameter "
                    + "names are not available: compile with -parameters (the Spring Boot parent does), or use #p0/#a0", "Compile with -parameters (the Spring Boot parent turns it on; with the Maven compiler plugin: <parameters>true</parameters>), or refer to parameters by position: #p0, #a0");
        }
        List<String> known = new ArrayList<>();
        for (String name : parameterNames) {
            known.add("#" + name);
        }
        throw new InvalidAnnotationException("key '" + expression + "' uses " + unknown + ", which the method does not have; "
                + "its parameters are " + known + " (or #p0, #a0...)", "Use one of the method's parameter names, or #p0/#a0 by position");
    }

    /** Resolves parameters through an index computed at parse time instead of a map filled per call. */
    private static final class ParameterEvaluationContext extends StandardEvaluationContext {

        private final Object[] args;
        private final Map<String, Integer> parameterIndex;

        ParameterEvaluationContext(Object root, Object[] args, Map<String, Integer> parameterIndex) {
            super(root);
            this.args = args;
            this.parameterIndex = parameterIndex;
        }

        @Override
        public Object lookupVariable(String name) {
            Integer i = parameterIndex.get(name);
            return (i != null) ? args[i] : super.lookupVariable(name);
        }
    }
}
