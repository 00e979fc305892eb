"""Which sent mails show how the owner writes, and which part of each is the owner's own.

A writing style is learned from what the owner typed, so automated, forwarded and
secret-holding mail is left out whole, and from the rest the quoted reply history and the
signature are cut. Pure functions: the same mails give the same samples, and tests need no
server. The headers and markers read: docs/memory.md (Writing style from Gmail).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.gmail.values import MailMessage
from core.secrets import find_secret

MAX_SAMPLE_CHARS = 2_000  # one mail's share of the prompt
MAX_TOTAL_CHARS = 40_000  # all of them together

_BULK_HEADERS = ("list-unsubscribe", "list-id", "list-post", "x-autoreply", "x-autorespond", "x-auto-reply")
_PRECEDENCE = re.compile(r"\b(bulk|list|junk|auto_reply)\b", re.I)
_NO_REPLY = re.compile(r"(no[-_.]?reply|do[-_.]?not[-_.]?reply|mailer-daemon|postmaster|notifications?@|bounces?[@+])", re.I)
_AUTOMATED_SUBJECT = re.compile(
    r"^\s*(automatic reply|auto(matic)?[- ]?(reply|response)|out of (the )?office|abwesenheitsnotiz|"
    r"r[ée]ponse automatique|resposta autom[áa]tica|respuesta autom[áa]tica|"
    r"(updated )?invitation|accepted|declined|tentative(ly accepted)?|canceled event|cancelled event)\b", re.I)
_FORWARDED_SUBJECT = re.compile(r"^\s*(fwd?|fw|tr|wg|rv|enc)\s*:", re.I)
_FORWARDED_BODY = re.compile(
    r"^\s*(-{2,}\s*(forwarded message|mensagem encaminhada|mensaje reenviado|message transf[ée]r[ée]|"
    r"weitergeleitete nachricht)\s*-{2,}|begin forwarded message:)",
    re.I | re.M)
# where the reply history starts: everything from here on is someone else's, or older
_HISTORY = re.compile(
    r"^[ \t]*(?:(?:on\b[^\n]{0,300}?(?:\n[^\n]{0,200}?)?\bwrote|em\b[^\n]{0,300}?escreveu|"
    r"el\b[^\n]{0,300}?escribi[óo]|le\b[^\n]{0,300}?a [ée]crit ?|am\b[^\n]{0,300}?schrieb[^\n]{0,100}?):[ \t]*$|"
    r"-{2,}\s*original message\s*-{2,}|_{10,}[ \t]*$|"
    r"from:[^\n]*\n(?:sent|date|enviado|gesendet|envoy[ée]):)",
    re.I | re.M)
_SIGNATURE = re.compile(r"^--[ \t]*$", re.M)  # the signature delimiter: a block of contact details follows


@dataclass(frozen=True)
class Samples:
    """The owner's own words from each usable mail, and how many mails were left out."""

    texts: tuple[str, ...]
    skipped: int
    messages: tuple[MailMessage, ...]  # the mails the texts came from (their headers name people)


def is_automated(mail: MailMessage) -> bool:
    if mail.calendar:
        return True
    if any(mail.header(name) for name in _BULK_HEADERS):
        return True
    if _PRECEDENCE.search(mail.header("Precedence")):
        return True
    submitted = mail.header("Auto-Submitted").strip().lower()
    if submitted and submitted != "no":
        return True
    senders = " ".join(mail.header(name) for name in ("From", "Sender", "Reply-To", "Return-Path"))
    if _NO_REPLY.search(senders) or _NO_REPLY.search(mail.header("To")):
        return True
    return bool(_AUTOMATED_SUBJECT.match(mail.header("Subject")))


def is_forwarded(mail: MailMessage) -> bool:
    return bool(_FORWARDED_SUBJECT.match(mail.header("Subject")) or _FORWARDED_BODY.search(mail.text))


def own_words(text: str) -> str:
    """``text`` without its reply history and quoted lines: what the owner typed in this mail."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    for marker in (_HISTORY, _SIGNATURE):
        found = marker.search(text)
        if found is not None:
            text = text[:found.start()]
    kept = [line.rstrip() for line in text.split("\n") if not line.lstrip().startswith(">")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()


def select(mails: Sequence[MailMessage]) -> Samples:
    """The samples a run sends the memory model, within the prompt's budget."""
    texts: list[str] = []
    used: list[MailMessage] = []
    skipped, total = 0, 0
    for mail in mails:
        if is_automated(mail) or is_forwarded(mail):
            skipped += 1
            continue
        words = own_words(mail.text)
        if not words or find_secret(words) is not None or total >= MAX_TOTAL_CHARS:
            skipped += 1
            continue
        words = words[:min(MAX_SAMPLE_CHARS, MAX_TOTAL_CHARS - total)]
        total += len(words)
        texts.append(words)
        used.append(mail)
    return Samples(tuple(texts), skipped, tuple(used))
