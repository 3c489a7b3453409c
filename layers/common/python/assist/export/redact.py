"""Personal data out of label text before it leaves the tables (English and Spanish text alike).

Order matters: tokens and keys first (they contain digits that look like phone numbers),
then emails, IBANs, cards (Luhn-checked, so order numbers survive), IP addresses, phones.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}\b"  # JWT
    r"|\b(?:sk|pk|rk)[-_](?:live|test|proj)?[-_]?[A-Za-z0-9]{16,}\b"  # provider secret keys
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}\b"  # GitHub tokens
    r"|(?i:\bbearer\s+)[A-Za-z0-9._~+/=-]{12,}"
    r"|(?i:\b(?:api[_-]?key|token|secret|password|contraseña|clave)\s*[:=]\s*)\S{6,}"
    r"|\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}\b"  # long opaque mixed strings
)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b")
_CARD = re.compile(r"(?<![\w.])(?:\d[ -]?){12,18}\d(?![\w.])")
_IPV4 = re.compile(r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_PHONE = re.compile(r"(?<![\w+])\+?\(?\d[\d\s().-]{7,}\d(?![\w])")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(m: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", m.group())
    return "<CARD>" if 13 <= len(digits) <= 19 and _luhn(digits) else m.group()


def _phone(m: re.Match[str]) -> str:
    return "<PHONE>" if 9 <= len(re.sub(r"\D", "", m.group())) <= 15 else m.group()


def _ipv6(m: re.Match[str]) -> str:
    # "10:30:00" is a time: an address has "::" or at least five colons
    addr = m.group()
    return "<IP>" if "::" in addr or addr.count(":") >= 5 else addr


def redact(text: str) -> str:
    text = _TOKEN.sub("<TOKEN>", text)
    text = _EMAIL.sub("<EMAIL>", text)
    text = _IBAN.sub("<IBAN>", text)
    text = _CARD.sub(_card, text)
    text = _IPV6.sub(_ipv6, text)
    text = _IPV4.sub("<IP>", text)
    return _PHONE.sub(_phone, text)
