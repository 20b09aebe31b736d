import jakarta.servlet.FilterChain;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs examples/java/RushgateFilter against a live rushgate without a servlet container: the servlet
 * request and response are interfaces, so dynamic proxies stand in for them with what the filter reads
 * and writes. Usage: FilterCheck BASE ROOM TOKEN; it prints one line per case:
 *
 * <pre>
 * CASE through ATTRIBUTE_ROOM COOKIES   the chain ran, with the admission set as the request attribute
 * CASE redirect LOCATION COOKIES        the filter sent the visitor to the room's page
 * </pre>
 */
public final class FilterCheck {
    public static void main(String[] args) throws Exception {
        String base = args[0], room = args[1], token = args[2];
        var filter = new RushgateFilter(new RushgateVerifier(base), room, base + "/r/" + room);
        run(filter, "none", null, null, null);
        run(filter, "cookie", new Cookie[] {new Cookie("rg_admission", token)}, null, null);
        run(filter, "bearer", null, "Bearer " + token, null);
        run(filter, "site-bearer", new Cookie[] {new Cookie("rg_admission", token)}, "Bearer site-session.abc", null);
        run(filter, "query", null, null, token);
        run(filter, "query-held", new Cookie[] {new Cookie("rg_admission", token)}, null, token);
        run(filter, "query-stale", new Cookie[] {new Cookie("rg_admission", token.substring(0, token.length() - 4) + "AAAA")}, null, token);
        run(filter, "forged", new Cookie[] {new Cookie("rg_admission", token.substring(0, token.length() - 4) + "AAAA")}, null, null);
    }

    static void run(RushgateFilter filter, String name, Cookie[] cookies, String authorization, String query) throws Exception {
        Map<String, Object> attrs = new HashMap<>();
        List<String> set = new ArrayList<>();
        String[] location = {null};
        var req = (HttpServletRequest) Proxy.newProxyInstance(FilterCheck.class.getClassLoader(), new Class<?>[] {HttpServletRequest.class},
            (p, m, a) -> switch (m.getName()) {
                case "getParameter" -> "rg_admission".equals(a[0]) ? query : null;
                case "getHeader" -> "Authorization".equals(a[0]) ? authorization : null;
                case "getCookies" -> cookies;
                case "getRequestURL" -> new StringBuffer("https://shop.example/checkout");
                case "getQueryString" -> query == null ? null : "rg_admission=" + query;
                case "isSecure" -> true;
                case "setAttribute" -> attrs.put((String) a[0], a[1]);
                default -> throw new UnsupportedOperationException(m.getName());
            });
        var res = (HttpServletResponse) Proxy.newProxyInstance(FilterCheck.class.getClassLoader(), new Class<?>[] {HttpServletResponse.class},
            (p, m, a) -> switch (m.getName()) {
                case "addCookie" -> {
                    Cookie c = (Cookie) a[0];
                    set.add(c.getName() + (c.isHttpOnly() ? ";HttpOnly" : "") + (c.getSecure() ? ";Secure" : ""));
                    yield null;
                }
                case "sendRedirect" -> {
                    location[0] = (String) a[0];
                    yield null;
                }
                default -> throw new UnsupportedOperationException(m.getName());
            });
        boolean[] through = {false};
        FilterChain chain = (rq, rs) -> through[0] = true;
        filter.doFilter(req, res, chain);
        String cookiesSet = set.isEmpty() ? "-" : String.join(",", set);
        if (through[0]) {
            var a = (RushgateVerifier.Admission) attrs.get("rushgate.admission");
            System.out.println(name + " through " + (a == null ? "-" : a.room()) + " " + cookiesSet);
        } else {
            System.out.println(name + " redirect " + location[0] + " " + cookiesSet);
        }
    }
}
