import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/**
 * A servlet filter that lets through only visitors with a rushgate admission of one room, and sends the
 * others to the room's page: a Spring Boot app registers it as it is,
 *
 * <pre>
 * &#64;Bean FilterRegistrationBean&lt;RushgateFilter&gt; rushgate() {
 *     var r = new FilterRegistrationBean&lt;&gt;(new RushgateFilter(
 *         new RushgateVerifier("https://queue.example.com"), "sale", "https://queue.example.com/r/sale"));
 *     r.addUrlPatterns("/checkout/*");
 *     return r;
 * }
 * </pre>
 *
 * The token comes from the Authorization bearer header (when it holds an admission: the site may use the
 * header for its own logins), the rg_admission cookie, or the rg_admission
 * query parameter the room's page sends visitors back with (moved into the cookie unless the visitor
 * holds a live admission already, which a link must not replace). The verified
 * admission is set as the request attribute "rushgate.admission".
 */
public final class RushgateFilter implements Filter {
    private final RushgateVerifier verifier;
    private final String room;
    private final String roomURL;

    public RushgateFilter(RushgateVerifier verifier, String room, String roomURL) {
        this.verifier = verifier;
        this.room = room;
        this.roomURL = roomURL;
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain) throws IOException, ServletException {
        HttpServletRequest r = (HttpServletRequest) req;
        HttpServletResponse w = (HttpServletResponse) res;
        String fresh = r.getParameter("rg_admission");
        // A live admission the visitor holds is kept: a link that hands over another (anyone may send
        // one) must not replace it by navigation alone.
        RushgateVerifier.Admission a = verified(bearer(r));
        if (a == null) a = verified(cookie(r)); // the site may use the header for its own logins
        if (a == null && fresh != null) {
            a = verified(fresh);
            if (a != null) {
                Cookie c = new Cookie("rg_admission", fresh);
                c.setHttpOnly(true);
                c.setSecure(r.isSecure());
                c.setPath("/");
                c.setMaxAge((int) Math.max(0, a.expiresAt().getEpochSecond() - System.currentTimeMillis() / 1000));
                w.addCookie(c);
            }
        }
        if (a == null) {
            String back = r.getRequestURL() + (r.getQueryString() == null ? "" : "?" + r.getQueryString());
            w.sendRedirect(roomURL + "?return_to=" + URLEncoder.encode(back, StandardCharsets.UTF_8));
            return;
        }
        r.setAttribute("rushgate.admission", a);
        chain.doFilter(req, res);
    }

    private RushgateVerifier.Admission verified(String token) {
        if (token == null) return null;
        try {
            return verifier.verify(token, room);
        } catch (RushgateVerifier.InvalidAdmission e) {
            return null;
        }
    }

    private static String bearer(HttpServletRequest r) {
        String h = r.getHeader("Authorization");
        return h != null && h.startsWith("Bearer ") ? h.substring(7) : null;
    }

    private static String cookie(HttpServletRequest r) {
        if (r.getCookies() != null) {
            for (Cookie c : r.getCookies()) {
                if ("rg_admission".equals(c.getName())) return c.getValue();
            }
        }
        return null;
    }
}
