#!/usr/bin/env python3
"""Verify a rushgate admission token offline, in Python with PyJWT (Debian: python3-jwt).

The token is an Ed25519 JWT (alg EdDSA) signed by one of the keys rushgate publishes at /v1/keys; the
keys are cached for a minute and fetched again when a token names a key not yet seen, as rushgate's Go
verifier (admission.NewRemoteVerifier) does.

    python3 verify.py http://127.0.0.1:8080 sale <token>
prints "valid <visitor> <room> <expires>" and exits 0, or "invalid <reason>" and exits 1.
"""
import json
import sys
import time
import urllib.request

import jwt  # PyJWT 2.x with cryptography

KEYS_TTL = 60  # seconds, as /v1/keys says in its Cache-Control


class Verifier:
    def __init__(self, base_url):
        self.keys_url = base_url.rstrip("/") + "/v1/keys"
        self.keys = {}
        self.fetched = 0.0

    def _fetch(self):
        with urllib.request.urlopen(self.keys_url, timeout=5) as res:
            jwks = json.load(res)
        self.keys = {k["kid"]: jwt.PyJWK(k).key for k in jwks["keys"]}
        self.fetched = time.time()

    def _key(self, kid):
        if time.time() - self.fetched > KEYS_TTL or kid not in self.keys:
            self._fetch()
        return self.keys.get(kid)

    def verify(self, token, room):
        """Return the token's claims if it is a valid admission of room; raise jwt.InvalidTokenError."""
        kid = jwt.get_unverified_header(token).get("kid")
        key = self._key(kid)
        if key is None:
            raise jwt.InvalidKeyError("unknown key " + str(kid))
        claims = jwt.decode(token, key, algorithms=["EdDSA"], options={"require": ["exp", "sub"]})
        if claims.get("room") != room:
            raise jwt.InvalidTokenError("the admission is for another room")
        return claims


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    base, room, token = sys.argv[1:]
    try:
        c = Verifier(base).verify(token, room)
    except jwt.InvalidTokenError as e:
        print("invalid", e)
        sys.exit(1)
    print("valid", c["sub"], c["room"], c["exp"])


if __name__ == "__main__":
    main()
