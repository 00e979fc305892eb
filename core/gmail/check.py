"""The server's check of a style description: at most 500 characters, and nothing from the mails.

The memory model is told to describe only the style, but a model can slip and the mails are
the owner's correspondence, so the server refuses a description that is too long or holds
contact details, a secret, or a name, number or phrase of the sampled mails. A refusal names
its kind only, never the words. What counts as a name: docs/memory.md (Writing style from Gmail).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from email.utils import getaddresses

from core.gmail.sampling import Samples
from core.secrets import find_secret

MAX_STYLE_CHARS = 500
QUOTE_WORDS = 4

WHY: dict[str, str] = {
    "empty": "it was empty",
    "too_long": f"it was longer than {MAX_STYLE_CHARS} characters",
    "email_address": "it contained an email address",
    "phone_number": "it contained a phone number",
    "secret": "it contained something secret",
    "number": "it contained a number that appears in the emails",
    "name": "it contained a name that appears in the emails",
    "quote": f"it copied {QUOTE_WORDS} or more words in a row from the emails",
}

# the vocabulary a style is described in: capitalised in mails, and no one's name
STYLE_WORDS = frozenset("""
I I'm I'll I've I'd OK Ok Hi Hello Hey Dear Thanks Thank Best Cheers Regards Kind Warm Warmly Love Yours Sincerely
All Take Care Good Morning Afternoon Evening Mr Mrs Ms Dr Sir Madam Team Please Sorry Yes No Olá Oi Obrigado Obrigada
Abraço Abraços Beijos Hola Gracias Saludos Bonjour Merci Cordialement Hallo Danke Grüße Ciao Grazie English Portuguese
Spanish French German Italian Dutch Catalan Galician Brazilian European British American Email Emails
""".split())
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"\+?\d[\d\s().-]{5,}\d")
_DIGITS = re.compile(r"\d+")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|dear|ol[áa]|oi|hola|bonjour|hallo|ciao|good (?:morning|afternoon|evening)|morning)[\s,]+"
    r"((?:[A-Z][\w'’-]*\s*){1,3})", re.I | re.M)
_CLOSING = re.compile(
    r"^\s*(?:best|thanks|thank you|many thanks|cheers|regards|kind regards|best regards|warm regards|warmly|love|"
    r"yours|sincerely|all the best|take care|obrigad[oa]|abra[çc]os?|beijos?|saludos|gracias|cordialement|merci|"
    r"gr[üu](?:ß|ss)e|lg|ciao)\b[^\n]*\n+\s*([^\n]{1,60})", re.I | re.M)
_MID_SENTENCE = re.compile(r"(?<=[^\s.!?:])[ \t,;(\"'“]+([A-Z][\w'’-]+)")  # not the first word of a sentence


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _header_names(samples: Samples) -> set[str]:
    names: set[str] = set()
    for mail in samples.messages:
        fields = [mail.header(h) for h in ("From", "To", "Cc", "Bcc", "Reply-To", "Sender")]
        for display, address in getaddresses([f for f in fields if f]):
            names.update(w for w in _words(display) if len(w) >= 2)
            local = address.partition("@")[0]
            names.update(part.capitalize() for part in re.split(r"[._+\-\d]+", local) if len(part) >= 3)
    return names


def _text_names(text: str) -> set[str]:
    names: set[str] = set()
    for found in _GREETING.finditer(text):
        names.update(w for w in _words(found.group(1)) if w[:1].isupper())
    for found in _CLOSING.finditer(text):
        line = found.group(1).strip()
        words = _words(line)
        if 0 < len(words) <= 3 and all(w[:1].isupper() for w in words):
            names.update(words)
    names.update(found.group(1) for found in _MID_SENTENCE.finditer(text))
    return names


def sampled_names(samples: Samples) -> frozenset[str]:
    """Every name the mails show, as capitalised words (docs/memory.md, Writing style from Gmail)."""
    names = _header_names(samples)
    for text in samples.texts:
        names |= _text_names(text)
    return frozenset(n for n in names if n not in STYLE_WORDS and len(n) >= 2)


_LETTERS = re.compile(r"[^\W\d_]+")
_FOLDED_STYLE_WORDS = frozenset(w.casefold() for w in STYLE_WORDS)


def _folded_parts(words: Iterable[str]) -> set[str]:
    """Words as letter runs, case-folded: "Ana's", "ANA" and "Maya-style" hold "ana" and "maya"."""
    return {part.casefold() for word in words for part in _LETTERS.findall(word) if len(part) >= 2}


NUMBER_WORDS = frozenset("""zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand
million""".split())


def _spelled_number(text: str) -> bool:
    """Two number words in a row ("nine one two", "forty-five thousand"): a number written out."""
    words = [w.casefold() for w in _LETTERS.findall(text)]
    return any(a in NUMBER_WORDS and b in NUMBER_WORDS for a, b in zip(words, words[1:], strict=False))


def _grams(words: Iterable[str], n: int) -> set[tuple[str, ...]]:
    seq = list(words)
    return {tuple(seq[i:i + n]) for i in range(len(seq) - n + 1)}


def _lower_words(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in re.findall(r"[\w'’]+", text)]


def refusal(style: str, samples: Samples) -> str | None:
    """Why ``style`` may not be saved (a key of ``WHY``), or None when it may."""
    text = style.strip()
    if not text:
        return "empty"
    if len(text) > MAX_STYLE_CHARS:
        return "too_long"
    if _EMAIL.search(text):
        return "email_address"
    if _PHONE.search(text):
        return "phone_number"
    if find_secret(text) is not None:
        return "secret"
    numbers = {d.lstrip("0") or "0" for t in samples.texts for d in _DIGITS.findall(t)}
    if any((d.lstrip("0") or "0") in numbers for d in _DIGITS.findall(text)) or _spelled_number(text):
        return "number"
    names = _folded_parts(sampled_names(samples)) - _FOLDED_STYLE_WORDS
    if names & _folded_parts(_LETTERS.findall(text)):  # in any case, possessive or hyphenated
        return "name"
    sampled = set().union(*(_grams(_lower_words(t), QUOTE_WORDS) for t in samples.texts)) if samples.texts else set()
    if _grams(_lower_words(text), QUOTE_WORDS) & sampled:
        return "quote"
    return None
