package io.github.distlock.sample;

import java.io.IOException;
import java.io.Writer;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.catalina.Valve;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.core.StandardHost;
import org.apache.catalina.valves.ErrorReportValve;
import org.apache.coyote.ActionCode;
import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;

/**
 * Tomcat's own error answers as problem details too. A request Tomcat refuses before Spring sees it (request
 * headers over {@code server.max-http-request-header-size}, a malformed request line) would otherwise get Tomcat's
 * HTML error page, while every other error of this API is {@code application/problem+json}. Spring MVC never sees
 * such a request, so this valve, in place of Tomcat's {@link ErrorReportValve} on the host, writes the same
 * {@code invalid-request} shape, with the status Tomcat chose.
 */
final class ProblemDetailErrorReportValve extends ErrorReportValve {

    @Override
    protected void report(Request request, Response response, Throwable throwable) {
        int status = response.getStatus();
        // as Tomcat's valve: nothing for a success, an answer already written (Spring's problem details) or a
        // connection that can no longer be written to
        if (status < 400 || response.getContentWritten() > 0) {
            return;
        }
        AtomicBoolean writable = new AtomicBoolean(false);
        response.getCoyoteResponse().action(ActionCode.IS_IO_ALLOWED, writable);
        if (!writable.get()) {
            return;
        }
        HttpStatus known = HttpStatus.resolve(status);
        String title = (known != null) ? known.getReasonPhrase() : "Error";
        String json = "{\"type\":\"urn:distlock-sample:problem:invalid-request\",\"title\":\"" + title
                + "\",\"status\":" + status + ",\"detail\":\"The server refused the request before reading it "
                + "(request headers larger than it accepts, or a malformed request).\",\"errors\":{}}";
        try {
            response.setContentType("application/problem+json");
            response.setCharacterEncoding("UTF-8");
            Writer writer = response.getReporter();
            if (writer != null) {
                writer.write(json);
                response.finishResponse();
            }
        }
        catch (IOException | IllegalStateException ex) {
            // the client went away or the answer was started elsewhere: nothing more can be said to it
        }
    }

    /** Puts the valve on the host in place of Tomcat's, and of the one Spring Boot adds to hide the server's name. */
    @Component
    static class Installer implements WebServerFactoryCustomizer<TomcatServletWebServerFactory> {

        @Override
        public void customize(TomcatServletWebServerFactory factory) {
            factory.addContextCustomizers(context -> {
                if (context.getParent() instanceof StandardHost host) {
                    for (Valve valve : host.getPipeline().getValves()) {
                        if (valve instanceof ErrorReportValve) {
                            host.getPipeline().removeValve(valve);
                        }
                    }
                    // the host adds a valve of this class on start unless it finds one: then it finds ours
                    host.setErrorReportValveClass(ProblemDetailErrorReportValve.class.getName());
                    host.getPipeline().addValve(new ProblemDetailErrorReportValve());
                }
            });
        }
    }
}
