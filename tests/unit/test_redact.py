"""Redaction, table-driven over the kinds of personal data, in English and Spanish text."""

import pytest

from assist.export.redact import redact

CASES = [
    ("email", "write to ana.garcia+api@example.co.uk please", "write to <EMAIL> please"),
    ("email es", "mi correo es pepe@empresa.es, gracias", "mi correo es <EMAIL>, gracias"),
    ("phone intl", "call me at +34 612 345 678 tomorrow", "call me at <PHONE> tomorrow"),
    ("phone us", "my number is (415) 555-0132.", "my number is <PHONE>."),
    ("teléfono", "llámame al 612-34-56-78 por la tarde", "llámame al <PHONE> por la tarde"),
    ("card", "card 4111 1111 1111 1111 was charged", "card <CARD> was charged"),
    ("tarjeta", "la tarjeta 5500-0000-0000-0004 falla", "la tarjeta <CARD> falla"),
    ("iban", "IBAN ES91 2100 0418 4502 0005 1332 for refunds", "IBAN <IBAN> for refunds"),
    ("iban compact", "transfiere a DE89370400440532013000 hoy", "transfiere a <IBAN> hoy"),
    ("api key", "my key is sk-live-4eC39HqLyjWDarjtT1zdp7dc and it fails", "my key is <TOKEN> and it fails"),
    ("aws key", "AKIAIOSFODNN7EXAMPLE leaked", "<TOKEN> leaked"),
    ("bearer", "Authorization: Bearer abc.def-123456789xyz", "Authorization: <TOKEN>"),
    ("jwt", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "token <TOKEN>"),
    ("clave", "mi clave: Xk9_pQ2mZ7", "mi <TOKEN>"),
    ("ipv4", "requests from 192.168.10.24 are blocked", "requests from <IP> are blocked"),
    ("ipv6", "desde 2001:db8:85a3::8a2e:370:7334 no conecta", "desde <IP> no conecta"),
]

KEPT = [
    "How do rate limits work on the free plan?",
    "¿cuántas llamadas llevo este mes? unas 12000",
    "order 12345 failed on 2026-11-20 with ERR_429",
    "set OLLAMA_TIMEOUT_S=60 and retry 3 times",
    "version 1.2.3 of the SDK",
    "the job ran at 10:30:00 and at 22:15",
]


@pytest.mark.parametrize(("kind", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_personal_data_is_replaced(kind, text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_is_kept(text):
    assert redact(text) == text
