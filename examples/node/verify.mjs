// Verify a rushgate admission token offline, in Node.js with jose: an Ed25519 JWT (alg EdDSA) signed by
// one of the keys at /v1/keys. createRemoteJWKSet caches the keys and fetches them again when a token
// names one it has not seen, as rushgate's Go verifier does.
//
//   node verify.mjs http://127.0.0.1:8080 sale <token>
// prints "valid <visitor> <room> <expires>" and exits 0, or "invalid <reason>" and exits 1.
import { createRemoteJWKSet, jwtVerify } from "jose";

export function verifier(baseURL) {
  const keys = createRemoteJWKSet(new URL("/v1/keys", baseURL), { cacheMaxAge: 60_000, cooldownDuration: 30_000 });
  return async (token, room) => {
    const { payload } = await jwtVerify(token, keys, { algorithms: ["EdDSA"], requiredClaims: ["exp", "sub"] });
    if (payload.room !== room) throw new Error("the admission is for another room");
    return payload;
  };
}

const [base, room, token] = process.argv.slice(2);
if (!token) {
  console.error("usage: node verify.mjs BASE_URL ROOM TOKEN");
  process.exit(2);
}
try {
  const c = await verifier(base)(token, room);
  console.log("valid", c.sub, c.room, c.exp);
} catch (e) {
  console.log("invalid", e.message);
  process.exit(1);
}
