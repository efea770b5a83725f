package io.github.distlock.generated;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.OutputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.tools.DiagnosticCollector;
import javax.tools.FileObject;
import javax.tools.ForwardingJavaFileManager;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * Compiles generated Java sources in memory and loads them: annotations are fixed at compile time, so a generated
 * combination of attributes needs a class of its own.
 */
final class GeneratedSources {

    private GeneratedSources() {
    }

    /**
     * Compiles {@code sources} (class name to source) against the code sources of {@code classpath}, and loads them.
     *
     * @throws IllegalStateException with javac's diagnostics when a source does not compile
     */
    static Map<String, Class<?>> compile(Map<String, String> sources, Class<?>... classpath) throws Exception {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        Map<String, ByteArrayOutputStream> classes = new HashMap<>();
        StandardJavaFileManager standard = javac.getStandardFileManager(diagnostics, null, null);
        ForwardingJavaFileManager<StandardJavaFileManager> files = new ForwardingJavaFileManager<>(standard) {
            @Override
            public JavaFileObject getJavaFileForOutput(Location location, String className, JavaFileObject.Kind kind,
                    FileObject sibling) {
                return new SimpleJavaFileObject(URI.create("mem:///" + className.replace('.', '/') + kind.extension), kind) {
                    @Override
                    public OutputStream openOutputStream() {
                        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                        classes.put(className, bytes);
                        return bytes;
                    }
                };
            }
        };
        List<JavaFileObject> units = new ArrayList<>();
        sources.forEach((name, text) -> units.add(new SimpleJavaFileObject(
                URI.create("string:///" + name.replace('.', '/') + ".java"), JavaFileObject.Kind.SOURCE) {
            @Override
            public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                return text;
            }
        }));
        List<String> paths = new ArrayList<>();
        for (Class<?> type : classpath) {
            paths.add(location(type));
        }
        List<String> options = List.of("-classpath", String.join(File.pathSeparator, paths), "-parameters",
                "-proc:none", "-nowarn");
        if (!javac.getTask(null, files, diagnostics, options, null, units).call()) {
            throw new IllegalStateException("generated sources do not compile: " + diagnostics.getDiagnostics());
        }
        // a SmartClassLoader: Spring defines the CGLIB proxy of a generated class through it, in the class's package
        class Loader extends ClassLoader implements org.springframework.core.SmartClassLoader {
            Loader() {
                super(GeneratedSources.class.getClassLoader());
            }

            @Override
            public Class<?> publicDefineClass(String name, byte[] code, java.security.ProtectionDomain domain) {
                return defineClass(name, code, 0, code.length, domain);
            }

            @Override
            protected Class<?> findClass(String name) throws ClassNotFoundException {
                ByteArrayOutputStream bytes = classes.get(name);
                if (bytes == null) {
                    throw new ClassNotFoundException(name);
                }
                byte[] code = bytes.toByteArray();
                return defineClass(name, code, 0, code.length);
            }
        }
        ClassLoader loader = new Loader();
        Map<String, Class<?>> loaded = new HashMap<>();
        for (String name : sources.keySet()) {
            loaded.put(name, loader.loadClass(name));
        }
        return loaded;
    }

    private static String location(Class<?> type) throws URISyntaxException {
        return new File(type.getProtectionDomain().getCodeSource().getLocation().toURI()).getPath();
    }
}
