"""Recognises text that holds a secret, for every path that stores text.

Messages are flagged on arrival; notes, skills and imports are refused. Detection errs
towards caution: a false positive costs one unsaved note, a false negative leaks a key into
a memory the agent reads every turn. Only the kind is ever returned, never the secret, so a
detected secret reaches no terminal and no log. What counts: docs/memory.md (Secrets).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import parse_qsl, urlsplit

from core.errors import SecretRefused
from core.passwords import has_password, password_spans

# a run of digits with up to five separator characters (" – ", ",  ") between them; _has_card reads the groups
_CARD = re.compile(r"(?<!\d)\d(?:(?:[^\w\n]|_){0,5}\d)+(?!\d)")
_NON_DIGITS = re.compile(r"\D+")
_PROVIDER_KEYS = re.compile(
    r"""(?x)
    \b(?:
      AKIA[0-9A-Z]{16}                              # AWS access key id
    | ASIA[0-9A-Z]{16}                              # AWS temporary key id
    | sk-(?:proj-|live-|test-|ant-)?[A-Za-z0-9_-]{20,}  # OpenAI, Anthropic and similar
    | gh[pousr]_[A-Za-z0-9]{30,}                    # GitHub tokens
    | github_pat_[A-Za-z0-9_]{40,}
    | xox[abposr]-[A-Za-z0-9-]{10,}                 # Slack tokens
    | (?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}   # Stripe keys
    | AIza[0-9A-Za-z_-]{35}                         # Google API keys
    | glpat-[A-Za-z0-9_-]{20,}                      # GitLab tokens
    | eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}  # JWTs
    )"""
)
_AWS_SECRET = re.compile(r"(?i)aws.{0,20}secret.{0,20}[A-Za-z0-9/+=]{40}")
_PEM = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY( BLOCK)?-----")
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}")
_URL = re.compile(r"(?i)\b(?:https?|ftp)://[^\s<>\"']+")
_BARE_URL = re.compile(r"(?i)(?<![\w@/.])(?:[a-z0-9-]+\.)+[a-z]{2,}/[^\s<>\"']*")  # example.com/login?token=…

_LOGIN_PARAMS = {
    "token", "access_token", "id_token", "refresh_token", "auth", "authtoken", "code",
    "session", "sessionid", "session_id", "sid", "key", "apikey", "api_key", "secret",
    "password", "pass", "pwd", "otp", "magic", "login_token", "signature", "sig",
    "x-amz-signature", "ticket",
}
# a path segment that names a sign-in step ("reset-password", "verify", "magic-link", "invite")
_LOGIN_STEP = re.compile(r"(?i)(?:^|[-_.])(?:reset|verif|magic|confirm|activat|invit|log-?in|sign-?in|sign-?up|auth|token|otp|"
                         r"unlock|recover|passw)")
_UUID = re.compile(r"(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_+/=-]{32,}")


def _luhn_ok(digits: str) -> bool:
    total, double = 0, False
    for ch in reversed(digits):
        d = int(ch)
        if double:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
        double = not double
    return total % 10 == 0


def _is_card(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and len(set(digits)) > 1 and _luhn_ok(digits)


def _card_spans(text: str) -> list[tuple[int, int]]:
    """Cards written whole, or as consecutive groups of 3–6 digits (4111.1111.1111.1111): each run's span."""
    spans = []
    for match in _CARD.finditer(text):
        groups = _NON_DIGITS.split(match.group())
        if any(_is_card(g) for g in groups) or any(_is_card(d) for d in _group_runs(groups, 3)):
            spans.append(match.span())
    return spans + _worded_card_spans(text)


def _group_runs(groups: list[str], shortest: int) -> list[str]:
    """The digits of every run of consecutive groups of ``shortest``–6 digits, up to 19 digits long."""
    runs = []
    for first in range(len(groups)):
        digits = ""
        for group in groups[first:]:
            if not shortest <= len(group) <= 6 or len(digits) + len(group) > 19:
                break
            digits += group
            runs.append(digits)
    return runs


_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?](?=\S)[^.!?\n]*)*")  # a dot between digits does not end one
_DIGIT_RUN = re.compile(r"\d+")
_WORDS_BETWEEN = re.compile(r"(?:[^\w\n]|_)*(?:[^\W\d_]{1,12}(?:[^\w\n]|_)+){1,3}")  # "then", ", and then "


def _worded_card_spans(text: str) -> list[tuple[int, int]]:
    """A card read out in groups with words between, within one sentence: "4111 1111 then 1111 1111".

    Stricter than a card written whole, because ordinary sentences hold several numbers:
    groups of 4–6 digits, at most three short words between two of them, 14–19 digits
    starting as cards do (3–6), Luhn-valid.
    """
    for sentence in _SENTENCE.finditer(text):
        runs = list(_DIGIT_RUN.finditer(sentence.group()))
        for first in range(len(runs)):
            digits, worded = "", False
            for k in range(first, len(runs)):
                run = runs[k]
                if not 4 <= len(run.group()) <= 6 or len(digits) + len(run.group()) > 19:
                    break
                if k > first:
                    gap = sentence.group()[runs[k - 1].end():run.start()]
                    if _WORDS_BETWEEN.fullmatch(gap):
                        worded = True
                    elif _NON_DIGITS.fullmatch(gap) is None or len(gap) > 5:
                        break
                digits += run.group()
                if worded and len(digits) >= 14 and digits[0] in "3456" and _is_card(digits):
                    base = sentence.start()
                    return [(base + r.start(), base + r.end()) for r in runs[first:k + 1]]
    return []


def _has_card(text: str) -> bool:
    return bool(_card_spans(text))


def _entropy(token: str) -> float:
    counts = Counter(token)
    return -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())


def _looks_random(token: str) -> bool:
    """Long, mixed-class, high-entropy strings: keys nobody would type as prose."""
    classes = sum(bool(re.search(p, token)) for p in (r"[a-z]", r"[A-Z]", r"\d"))
    return classes >= 2 and any(c.isdigit() for c in token) and _entropy(token) >= 4.0


def _login_link(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return True
    if parts.username or parts.password:
        return True
    for name, value in parse_qsl(parts.query, keep_blank_values=True) + parse_qsl(parts.fragment, keep_blank_values=True):
        if name.lower() in _LOGIN_PARAMS:
            return True
        if len(name) <= 2 and len(value) >= 20:  # ?t=<long token>: a sign-in link like Nod's own page link
            return True
    segments = [s for s in parts.path.split("/") if s]
    return any(_LOGIN_STEP.search(s) for s in segments) and any(_random_piece(s) for s in segments)


def _random_piece(segment: str) -> bool:
    """Does a path segment hold a long random token (9f8e7d6c5b4a39281706, a UUID), not a slug of words?"""
    if _UUID.search(segment):
        return True
    for piece in re.split(r"[-_.~]", segment):
        has_digit, has_letter = any(c.isdigit() for c in piece), any(c.isalpha() for c in piece)
        if len(piece) >= 16 and has_digit and has_letter:
            return True
        if len(piece) >= 24 and has_letter and (has_digit or (piece != piece.lower() and piece != piece.upper())):
            return True
    return False


def _seen(text: str) -> str:
    """The text as a reader sees it: compatibility forms folded (full-width digits), invisible
    format characters (zero-width spaces, soft hyphens) gone, so they cannot hide a card."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text).translate(_invisible())


@lru_cache(maxsize=1)
def _invisible() -> dict[int, None]:
    """Unicode's format characters (category Cf), made on first use, never at import."""
    return dict.fromkeys(i for i in range(0x110000) if unicodedata.category(chr(i)) == "Cf")


_DIGIT = re.compile(r"\d")
_KEY_MARKS = ("AKIA", "ASIA", "sk-", "_", "xox", "AIza", "glpat-", "eyJ")  # every provider key holds one
_PASSWORD_MARKS = ("pass", "pwd", "pin", "senha", "contrase", "code", "key")  # every password word holds one


@dataclass(frozen=True)
class _Marks:
    """Which patterns can match at all, from substrings each of them needs.

    Only for ASCII text (case-insensitive patterns and ``str.lower`` agree there); other
    text runs every pattern. Importing a million messages checks each one, so a message
    with no digit, no slash and no key-like mark costs one pass instead of a dozen.
    """

    digits: bool = True
    pem: bool = True
    keys: bool = True
    aws: bool = True
    bearer: bool = True
    password: bool = True
    links: bool = True

    @classmethod
    def of(cls, text: str) -> _Marks:
        if not text.isascii():
            return cls()
        lowered = text.lower()
        return cls(digits=_DIGIT.search(text) is not None, pem="-----BEGIN " in text,
                   keys=any(m in text for m in _KEY_MARKS), aws="aws" in lowered, bearer="bearer" in lowered,
                   password=any(m in lowered for m in _PASSWORD_MARKS), links="/" in text)


def find_secret(text: str) -> str | None:
    """The kind of secret ``text`` holds, or None. Never returns the secret itself."""
    text = _seen(text)
    marks = _Marks.of(text)
    if marks.digits and _has_card(text):
        return "card number"
    if marks.pem and _PEM.search(text):
        return "private key"
    if (marks.keys and _PROVIDER_KEYS.search(text)) or (marks.aws and _AWS_SECRET.search(text)):
        return "key or token"
    if marks.bearer and _BEARER.search(text):
        return "bearer token"
    if marks.password and has_password(text):
        return "password"
    if marks.links:
        links = _URL.findall(text) + ["https://" + bare for bare in _BARE_URL.findall(_URL.sub(" ", text))]
        if any(_login_link(url) for url in links):
            return "link with a login"
    without_urls = _URL.sub(" ", text) if marks.links else text
    if any(_looks_random(t) for t in _LONG_TOKEN.findall(without_urls)):
        return "key or token"
    return None


def contains_secret(text: str) -> bool:
    return find_secret(text) is not None


def refuse_secrets(fields: Iterable[tuple[str, str]]) -> None:
    """SecretRefused naming the first (label, text) field that holds a secret, and its kind."""
    for label, value in fields:
        kind = find_secret(value)
        if kind:
            raise SecretRefused(f"Not saved: the {label} looks like it holds a {kind}.")


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """Where the secrets that have a place of their own are (cards, stated passwords, login
    links), with their kind, for redacting a draft; never overlapping, in order."""
    found = [(a, b, "card number") for a, b in _card_spans(text)]
    found += [(a, b, "password") for a, b in password_spans(text)]
    found += [(m.start(), m.end(), "link with a login") for m in _URL.finditer(text) if _login_link(m.group())]
    kept: list[tuple[int, int, str]] = []
    for span in sorted(found):
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept
