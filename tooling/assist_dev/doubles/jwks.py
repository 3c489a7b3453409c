"""An identity provider's part, on loopback: one RSA key, its JWKS served over HTTP, tokens signed with it.
The deploy rehearsal's issuer (`LoopbackIssuer`), and the tests' (`IdentityProvider`: a fixed issuer name and
audience)."""

from __future__ import annotations

import http.server
import json
import threading
import time
from typing import Any, Self


class LoopbackIssuer:
    """Serves `{"keys": [the public key]}` at `jwks_url` on 127.0.0.1 and signs RS256 tokens for `audience`;
    `issuer` defaults to its own URL. `fetches` counts the key set's downloads."""

    def __init__(self, audience: str, kid: str = "rehearsal", issuer: str | None = None) -> None:
        # deferred, ADR 0071: PyJWT (answer extra only)
        import jwt
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.jwks = json.dumps({"keys": [{**jwk, "kid": kid, "use": "sig", "alg": "RS256"}]}).encode()
        self.kid, self.audience, self.fetches = kid, audience, 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.fetches += 1
                self.send_response(200 if self.path.endswith("/jwks.json") else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(owner.jwks)))
                self.end_headers()
                self.wfile.write(owner.jwks)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        base = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.issuer = issuer or base
        self.jwks_url = f"{base}/.well-known/jwks.json"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def token(self, sub: str, key: Any = None, kid: str | None = None, ttl_s: int = 900, **claims: Any) -> str:
        """A token for `sub`, signed with this issuer's key unless `key` is given; `claims` override."""
        # deferred, ADR 0071: PyJWT (answer extra only)
        import jwt

        now = int(time.time())
        body = {"sub": sub, "iss": self.issuer, "aud": self.audience, "iat": now, "exp": now + ttl_s, **claims}
        return jwt.encode(body, key or self.key, algorithm="RS256", headers={"kid": kid or self.kid})

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


ISSUER = "https://idp.test.invalid/"
AUDIENCE = "assist-tests"


def rsa_key() -> Any:
    """A fresh RSA key (a token signed with it is one no issuer here vouches for)."""
    # deferred, ADR 0071: PyJWT (answer extra only)
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class IdentityProvider(LoopbackIssuer):
    """`url` serves {"keys": [the public key, kid "test-key"]}; `token(sub)` is a valid token for it."""

    def __init__(self, kid: str = "test-key") -> None:
        super().__init__(AUDIENCE, kid=kid, issuer=ISSUER)
        self.url = self.jwks_url
