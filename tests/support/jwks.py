"""The tests' identity provider: the library's loopback issuer (an RSA key, its JWKS over HTTP, PyJWT tokens)
with a fixed issuer name and audience."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric import rsa

from assist.deploy.jwks import LoopbackIssuer

ISSUER = "https://idp.test.invalid/"
AUDIENCE = "assist-tests"


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class IdentityProvider(LoopbackIssuer):
    """`url` serves {"keys": [the public key, kid "test-key"]}; `token(sub)` is a valid token for it."""

    def __init__(self, kid: str = "test-key") -> None:
        super().__init__(AUDIENCE, kid=kid, issuer=ISSUER)
        self.url = self.jwks_url
