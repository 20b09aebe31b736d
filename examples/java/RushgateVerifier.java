import java.math.BigInteger;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.EdECPoint;
import java.security.spec.EdECPublicKeySpec;
import java.security.spec.NamedParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Verifies rushgate admission tokens offline with nothing but JDK 17: the token is an Ed25519 JWT (alg
 * EdDSA) signed by one of the keys at /v1/keys, which this class fetches with java.net.http and keeps for
 * a minute, fetching again (at most every 30 seconds) when a token names a key it has not seen, as
 * rushgate's Go verifier does. Safe for concurrent use: one instance serves a whole site.
 *
 * <pre>java RushgateVerifier.java http://127.0.0.1:8080 sale TOKEN</pre>
 * prints "valid VISITOR ROOM EXPIRES" and exits 0, or "invalid REASON" and exits 1.
 */
public final class RushgateVerifier {
    /** The claims of a valid admission. */
    public record Admission(String visitor, String room, String id, Instant expiresAt) {}

    /** Thrown for a token that is not a valid admission of the room. */
    public static final class InvalidAdmission extends Exception {
        public InvalidAdmission(String reason) { super(reason); }
    }

    private static final Duration KEYS_TTL = Duration.ofSeconds(60);
    private static final Duration UNKNOWN_KID_COOLDOWN = Duration.ofSeconds(30);
    private static final Pattern OBJECT = Pattern.compile("\\{[^{}]*\\}");

    private final URI keysURI;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private volatile Map<String, PublicKey> keys = Map.of();
    private volatile Instant fetched = Instant.EPOCH;

    public RushgateVerifier(String baseURL) {
        this.keysURI = URI.create(baseURL.replaceAll("/+$", "") + "/v1/keys");
    }

    /** Returns the admission a token shows for room, or throws InvalidAdmission. */
    public Admission verify(String token, String room) throws InvalidAdmission {
        String[] parts = token == null ? new String[0] : token.split("\\.", -1);
        if (parts.length != 3) throw new InvalidAdmission("malformed");
        Base64.Decoder b64 = Base64.getUrlDecoder();
        String header, payload;
        byte[] sig;
        try {
            header = new String(b64.decode(parts[0]), StandardCharsets.UTF_8);
            payload = new String(b64.decode(parts[1]), StandardCharsets.UTF_8);
            sig = b64.decode(parts[2]);
        } catch (IllegalArgumentException e) {
            throw new InvalidAdmission("malformed");
        }
        if (!"EdDSA".equals(string(header, "alg"))) throw new InvalidAdmission("not an EdDSA token");
        PublicKey key = key(string(header, "kid"));
        if (key == null) throw new InvalidAdmission("unknown key");
        try {
            Signature s = Signature.getInstance("Ed25519");
            s.initVerify(key);
            s.update((parts[0] + "." + parts[1]).getBytes(StandardCharsets.US_ASCII));
            if (!s.verify(sig)) throw new InvalidAdmission("invalid signature");
        } catch (java.security.GeneralSecurityException e) {
            throw new InvalidAdmission("invalid signature");
        }
        Long exp = number(payload, "exp");
        if (exp == null || Instant.ofEpochSecond(exp).isBefore(Instant.now())) throw new InvalidAdmission("expired");
        if (!room.equals(string(payload, "room"))) throw new InvalidAdmission("wrong room");
        return new Admission(string(payload, "sub"), room, string(payload, "jti"), Instant.ofEpochSecond(exp));
    }

    private PublicKey key(String kid) throws InvalidAdmission {
        Instant now = Instant.now();
        Map<String, PublicKey> k = keys;
        boolean stale = now.isAfter(fetched.plus(KEYS_TTL));
        boolean unknown = kid != null && !k.containsKey(kid) && now.isAfter(fetched.plus(UNKNOWN_KID_COOLDOWN));
        if (stale || unknown) {
            synchronized (this) {
                if (keys == k) refresh();
            }
        }
        return keys.get(kid);
    }

    private void refresh() throws InvalidAdmission {
        try {
            HttpResponse<String> res = http.send(HttpRequest.newBuilder(keysURI).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (res.statusCode() != 200) throw new InvalidAdmission("key set: HTTP " + res.statusCode());
            Map<String, PublicKey> next = new ConcurrentHashMap<>();
            Matcher m = OBJECT.matcher(res.body());
            while (m.find()) {
                String jwk = m.group();
                if ("OKP".equals(string(jwk, "kty")) && "Ed25519".equals(string(jwk, "crv"))) {
                    next.put(string(jwk, "kid"), ed25519(string(jwk, "x")));
                }
            }
            keys = next;
            fetched = Instant.now();
        } catch (java.io.IOException | InterruptedException | java.security.GeneralSecurityException e) {
            throw new InvalidAdmission("key set: " + e);
        }
    }

    /** Builds an Ed25519 public key from a JWK's x: the little-endian y with x's parity in the top bit. */
    static PublicKey ed25519(String x) throws java.security.GeneralSecurityException {
        byte[] le = Base64.getUrlDecoder().decode(x);
        boolean xOdd = (le[31] & 0x80) != 0;
        le[31] &= 0x7f;
        byte[] be = new byte[le.length];
        for (int i = 0; i < le.length; i++) be[i] = le[le.length - 1 - i];
        EdECPoint point = new EdECPoint(xOdd, new BigInteger(1, be));
        return KeyFactory.getInstance("Ed25519").generatePublic(new EdECPublicKeySpec(NamedParameterSpec.ED25519, point));
    }

    // The JSON here is rushgate's own, flat and without escapes in these fields: a field is found by name.
    static String string(String json, String name) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(name) + "\"\\s*:\\s*\"([^\"]*)\"").matcher(json);
        return m.find() ? m.group(1) : null;
    }

    static Long number(String json, String name) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(name) + "\"\\s*:\\s*(\\d+)").matcher(json);
        return m.find() ? Long.valueOf(m.group(1)) : null;
    }

    public static void main(String[] args) {
        if (args.length != 3) {
            System.err.println("usage: java RushgateVerifier.java BASE_URL ROOM TOKEN");
            System.exit(2);
        }
        try {
            Admission a = new RushgateVerifier(args[0]).verify(args[2], args[1]);
            System.out.println("valid " + a.visitor() + " " + a.room() + " " + a.expiresAt().getEpochSecond());
        } catch (InvalidAdmission e) {
            System.out.println("invalid " + e.getMessage());
            System.exit(1);
        }
    }
}
