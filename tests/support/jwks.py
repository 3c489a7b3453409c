"""An identity provider on loopback: an RSA key pair, its public half served as a JWKS over HTTP
(stdlib http.server on 127.0.0.1), and tokens signed with PyJWT as a provider would issue them."""

from __future__ import annotations

import http.server
import json
import threading
import time
from typing import Any, Self

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ISSUER = "https://idp.test.invalid/"
AUDIENCE = "assist-tests"


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class IdentityProvider:
    """`url` serves {"keys": [the public key, kid "test-key"]}; `token(sub)` is a valid token for it."""

    def __init__(self, kid: str = "test-key") -> None:
        self.kid = kid
        self.key = rsa_key()
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        self.jwks = json.dumps({"keys": [{**jwk, "kid": kid, "use": "sig", "alg": "RS256"}]}).encode()
        self.fetches = 0
        provider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                provider.fetches += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(provider.jwks)))
                self.end_headers()
                self.wfile.write(provider.jwks)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/.well-known/jwks.json"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def token(self, sub: str, key: Any = None, kid: str | None = None, ttl_s: int = 300, **claims: Any) -> str:
        """A token for `sub`, signed with the provider's key unless `key` is given; `claims` override."""
        now = int(time.time())
        body = {"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + ttl_s, **claims}
        return jwt.encode(body, key or self.key, algorithm="RS256", headers={"kid": kid or self.kid})
