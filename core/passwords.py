"""Passwords, PINs and codes as people write them: "Password for the wifi: hunter2hunter2".

Part of the secrets detector (``core.secrets``), kept apart because it reads phrases, not
shapes: a secret word followed by its value, named then a sign ("the door code is 4821") or
straight after ("PIN 4821"). What keeps ordinary sentences ("the code review is on Monday",
"the wifi password is on the fridge") out of it: docs/memory.md (Secrets).
"""

from __future__ import annotations

import re

_QUALIFIED_CODE = (
    r"(?:door|gate|alarm|access|entry|security|lock|garage|safe|wi-?fi|building|keypad|locker|verification|otp|2fa|"
    r"one-time|login|sms|auth|authentication|backup|recovery|pin|unlock|front\s+door|intercom)\s+code"
)
_SECRET_WORD = (
    r"(?:" + _QUALIFIED_CODE + r"|passwords?|passwd|passcode|pass\s+code|pwd|pin(?:\s+(?:number|code))?|pass"
    r"|(?:wi-?fi|network|wpa2?)\s+key|senha|contraseña|passwort|mot\s+de\s+passe)"
)
_NOT_A_VALUE_NEXT = r"(?!\s+(?:manager|managers|hint|reset|policy|policies|strength|rules|changes?|expired?|expiry)\b)"
_NAMED = re.compile(
    r"(?i)\b(?P<word>" + _SECRET_WORD + r")\b" + _NOT_A_VALUE_NEXT
    + r"(?P<between>(?:\s+[^\s:=.!?]+){0,4}?)\s*(?P<sign>:|=|\bis\b|\bwas\b|\bare\b)\s*(?P<value>\S+)"
)
_STRAIGHT = re.compile(r"(?i)\b(?P<word>" + _SECRET_WORD + r")\b" + _NOT_A_VALUE_NEXT + r"\s+(?P<value>\S*\d\S*)")
_TRIM = "\"'“”‘’«»()[]{}<>.,;!?"
# Words that follow "is" in ordinary sentences about a password: where it is, what it is like.
_ORDINARY_AFTER_IS = frozenset(
    """a an the my your his her their our its this that it there here what which who not no never still also
    now then too very really just already always usually same different changed new old on in at under behind
    inside near by with without written taped saved stored kept somewhere below above long short strong weak
    wrong correct right expired expiring required needed missing unknown easy hard simple complicated secret
    case sensitive printed set reset updated being going in available lost forgotten blank empty fine ok okay
    shared private hidden on-screen elsewhere something nothing""".split()
)


def _value(raw: str) -> str:
    return raw.strip(_TRIM)


def _is_value(value: str, sign: str, word: str) -> bool:
    """Does ``value`` read as the secret itself rather than the next word of a sentence?"""
    if not value:
        return False
    if any(c.isdigit() for c in value) or re.search(r"[^\w\s]", value) or value[1:] != value[1:].lower():
        return True
    if sign in (":", "="):
        return True  # "Password: sunshine" labels its value
    if not re.match(r"(?i)pass|pwd|senha|contrase|mot", word):
        return False  # "my pin is broken": a PIN, a code or a key needs a value that is no plain word
    return value.lower() not in _ORDINARY_AFTER_IS and len(value) >= 4


_WORD_ONLY = re.compile(r"(?i)\b" + _SECRET_WORD + r"\b")


def password_spans(text: str) -> list[tuple[int, int]]:
    """Where each stated password, PIN or code value is in ``text`` (start, end), for finding and for redacting."""
    starts = [m.start() for m in _WORD_ONLY.finditer(text)]  # the phrases are read only where a secret word stands
    spans: list[tuple[int, int]] = []
    for match in (m for at in starts if (m := _NAMED.match(text, at))):
        raw = match.group("value")
        value = _value(raw)
        if re.search(r"[:=]|\b(?:is|was|are)\b", match.group("between") or ""):
            continue  # the sign belongs to a later clause
        sign = match.group("sign").lower()
        if match.group("word").lower() == "pass" and sign not in (":", "="):
            continue  # "my bus pass is valid": a bare "pass" is a password only when it labels a value
        if _is_value(value, sign, match.group("word")):
            start = match.start("value") + raw.index(value)
            spans.append((start, start + len(value)))
    for match in (m for at in starts if (m := _STRAIGHT.match(text, at))):
        raw = match.group("value")
        value = _value(raw)
        plain_pass = match.group("word").lower() == "pass"  # "pass 2 exams" is not one; "pass hunter2xyz" is
        if len(value) >= 4 and any(c.isdigit() for c in value) and (not plain_pass or any(c.isalpha() for c in value)):
            start = match.start("value") + raw.index(value)
            if not any(s <= start < e for s, e in spans):
                spans.append((start, start + len(value)))
    return sorted(spans)


def has_password(text: str) -> bool:
    return bool(password_spans(text))
