"""An identity provider's part in a rehearsal: one RSA key, its JWKS on loopback, tokens signed with it."""

from __future__ import annotations

import http.server
import json
import threading
import time
from typing import Any

from assist.local.stack import free_port


class LoopbackIssuer:
    """Serves `/.well-known/jwks.json` on 127.0.0.1 and signs RS256 tokens for `audience`."""

    def __init__(self, audience: str, kid: str = "rehearsal") -> None:
        import jwt
        from cryptography.hazmat.primitives.asymmetric import rsa

        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self._key.public_key()))
        self._jwks = json.dumps({"keys": [{**jwk, "kid": kid, "use": "sig", "alg": "RS256"}]}).encode()
        self.kid, self.audience = kid, audience
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.jwks_url = f"{self.issuer}/.well-known/jwks.json"
        jwks = self._jwks

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200 if self.path.endswith("/jwks.json") else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(jwks)))
                self.end_headers()
                self.wfile.write(jwks)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def token(self, sub: str, ttl_s: int = 900, **claims: Any) -> str:
        import jwt

        now = int(time.time())
        body = {"sub": sub, "iss": self.issuer, "aud": self.audience, "iat": now, "exp": now + ttl_s, **claims}
        return jwt.encode(body, self._key, algorithm="RS256", headers={"kid": self.kid})

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
