"""Is a note's text in the owner's own words? The check every model-written note passes.

A quote proves the owner said something, not the rest of the note, so every e-mail address,
link, number, date, time and capitalised name in the text must appear in a cited message:
strict where a wrong note does harm, tolerant of how a model formats. A refused note costs
one unsaved fact, an invented one the owner's trust, so the check errs towards refusing.
The rules, part by part: docs/memory.md (How saving works).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from core.saving import when
from core.text import fold, stem

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_LINK = re.compile(r"(?i)\b(?:https?://|www\.)[^\s<>\"']+|(?<![\w@.-])(?:[a-z0-9-]+\.)+[a-z]{2,24}(?:/[^\s<>\"']*)?(?![\w@])")
_NUMBER = re.compile(r"(?<!\d)\d+(?:(?:[ .,/\-]|\)\s?|\s?\()\d+)*(?P<k>[kK](?![\w]))?")
_WORD = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*")  # "O'Connell", "Wi-Fi", "Jean-Luc": one word
_LABEL = re.compile(r"[" + re.escape(" \t-–—*•\"'([") + r"]*(?P<label>(?:[^\W\d_]+(?:['-][^\W\d_]+)*\s+){0,3}"
                    r"[^\W\d_]+(?:['-][^\W\d_]+)*)\s*:")
_BOUNDARY = re.compile(r"[.!?]+[\"')\]]*\s+|\n")
_ABBREVIATIONS = frozenset("mr mrs ms dr st jr sr prof mt no vs etc approx ave rd nr".split())
_OPENERS = " \t:-–—,;*•\"'(["

# Words a model capitalises that are never names.
_NEVER_NAMES = frozenset(
    [*when.MONTHS, *when.WEEKDAYS, "i", "owner", "owners", "user", "users", "nod", "am", "pm", "ok"]
)
# Words that may start a note, a sentence or a label without being the owner's own words:
# the shapes notes are written in ("Sister:", "Lives in …", "Prefers …").
_ORDINARY = frozenset(
    """a an the this that these those his her their its our my your he she they it we you
    and or but also then so if when while because since until after before about with without
    for from in on at by to of as not no never always usually often sometimes currently recently
    now still already every each all some both either once twice
    yesterday today tonight tomorrow morning afternoon evening night week weekend month year
    next last previous upcoming daily weekly monthly yearly annual annually
    is was are were be been has had have having does did do will would can could should may might
    likes liked loves loved prefers preferred wants wanted needs needed hates dislikes enjoys enjoyed
    lives lived living works worked working owns owned uses used drives drove drinks drank eats ate
    plays played runs ran goes went gone visits visited moved moving bought buys sold sells paid pays
    plans planned planning booked booking started starts finished finishes adopted collects avoids
    takes took makes made keeps kept speaks spoke studies studied teaches taught wakes woke sleeps
    meets met married divorced born died turned turns joined left leaves got gets became becomes
    called named allergic vegetarian vegan intolerant favourite favorite preferred preference preferences
    home work office address addresses birthday anniversary wedding phone mobile number email name
    nickname surname age height weight size shoe blood type language languages timezone zone
    sister sisters brother brothers mother mum mom father dad parents parent son sons daughter daughters
    wife husband partner spouse girlfriend boyfriend fiance fiancee friend friends boss manager colleague
    coworker cousin aunt uncle grandmother grandfather grandma grandpa grandparents niece nephew
    child children kid kids baby family pet pets dog dogs cat cats neighbour neighbor landlord
    doctor dentist gp therapist vet school university college job employer company team
    diet allergy allergies food drink coffee tea breakfast lunch dinner meal
    delivery shipping billing postal mailing flight flights hotel trip travel holiday vacation
    meeting meetings appointment appointments reminder routine routines lesson lessons goal goals
    budget salary rent mortgage car bike gym hobby hobbies sport music book books
    note notes plan plans event events possession possessions purchase purchases fact facts
    place places person people about preferences contact contacts account order orders bank
    wifi password code pin door gate key keys""".split()
)
# A first word followed by one of these reads as the sentence's subject: "Bob is …", "Bob and Ana …".
_SUBJECT_NEXT = frozenset(
    """is was are were has had have lives lived works worked likes liked loves loved prefers wants owns
    said says and or will would can could does did gets got goes went moved plays studies teaches runs
    turns turned visits visited calls called needs uses drives drinks eats knows met married bought
    sells sold left joined started became becomes lost won""".split()
)
_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen " \
         "seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORDINAL_UNITS = "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth " \
                 "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth".split()


def _number_words() -> dict[str, int]:
    found = {w: n for n, w in enumerate(_UNITS)} | {w: n for n, w in enumerate(_ORDINAL_UNITS)}
    for i, ten in enumerate(_TENS):
        found[ten] = found[ten.replace("ty", "tieth")] = 20 + 10 * i
        for n in range(1, 10):
            found[f"{ten}-{_UNITS[n]}"] = found[f"{ten}-{_ORDINAL_UNITS[n]}"] = 20 + 10 * i + n
    return found | {"dozen": 12, "hundred": 100, "thousand": 1000}


_NUMBER_WORDS = _number_words()
_SPOKEN_NUMBER = re.compile(r"(?i)\b(?:" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")\b")


@dataclass(frozen=True)
class Source:
    """One cited owner message: its text, and the day it was sent in the owner's zone (what "yesterday" means)."""

    text: str
    sent: date | None = None


@dataclass(frozen=True)
class Ungrounded:
    """One part of a note's text no cited message holds: its kind and the part itself."""

    kind: str  # name | number | date | time | email | link
    value: str


def _clean(text: str) -> str:
    return unicodedata.normalize("NFC", text).replace("’", "'").replace("\u00a0", " ")


def _digits(number: str) -> str:
    return re.sub(r"\D", "", number).lstrip("0") or "0"


def _thousands(match: re.Match[str]) -> str | None:
    """50k is 50000; 1.5k is 1500."""
    if not match.group("k"):
        return None
    try:
        return _digits(str(round(float(match.group().rstrip("kK").replace(",", ".")) * 1000)))
    except ValueError:
        return None


def _link(value: str) -> str:
    canonical = value.casefold().rstrip(".,;:!?)]}'\"")
    canonical = re.sub(r"^[a-z][a-z0-9+.-]*://", "", canonical)
    return canonical.removeprefix("www.").rstrip("/")


def _word(token: str) -> str:
    folded = fold(token)
    return folded[:-2] if folded.endswith("'s") else folded


@dataclass(frozen=True)
class _Grounds:
    """What the cited messages hold, each part in the form a note's part is compared in."""

    words: frozenset[str]
    stems: frozenset[str]
    emails: frozenset[str]
    links: frozenset[str]
    numbers: frozenset[str]
    times: frozenset[tuple[int, int]]
    dates: frozenset[when.DateValue]
    sent_years: frozenset[int]
    windows: tuple[when.Window, ...] = ()

    @classmethod
    def of(cls, sources: Iterable[Source]) -> _Grounds:
        words: set[str] = set()
        emails: set[str] = set()
        links: set[str] = set()
        numbers: set[str] = set()
        times: set[tuple[int, int]] = set()
        dates: set[when.DateValue] = set()
        windows: list[when.Window] = []
        years: set[int] = set()
        for source in sources:
            text = _clean(source.text)
            emails |= {e.casefold() for e in _EMAIL.findall(text)}
            links |= {_link(u) for u in _LINK.findall(_EMAIL.sub(" ", text))}
            for match in _NUMBER.finditer(text):
                groups = re.findall(r"\d+", match.group())
                numbers |= {_digits("".join(groups[i:j])) for i in range(len(groups)) for j in range(i + 1, min(len(groups), i + 8) + 1)}
                numbers |= {n for n in (_thousands(match),) if n}
            numbers |= {str(_NUMBER_WORDS[w.lower()]) for w in _SPOKEN_NUMBER.findall(text)}
            times |= {t for span in when.times_in(text) for t in span.times} | when.spoken_hours(text)
            dates |= when.written_dates(text)
            for token in _WORD.findall(text):
                word = _word(token)
                words.update((word, word.replace("-", "")), *(fold(p) for p in re.split(r"['-]", token)))
            if source.sent is not None:
                years.add(source.sent.year)
                windows += when.windows(text, source.sent)
        numbers |= {str(day.year) for window in windows for day in (window.first, window.last)}
        return cls(frozenset(words), frozenset(stem(w) for w in words), frozenset(emails), frozenset(links),
                   frozenset(numbers), frozenset(times), frozenset(dates), frozenset(years), tuple(windows))


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _sentence_start(text: str, position: int) -> int:
    start = 0
    for match in _BOUNDARY.finditer(text, 0, position):
        before = re.search(r"(\w+)[.!?]*[\"')\]]*\s*$", text[:match.end()])
        word = before.group(1) if before else ""
        if match.group() != "\n" and (word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper())):
            continue  # "Dr. Silva", "J. Smith": not a new sentence
        start = match.end()
    return start


def _place(text: str, match: re.Match[str]) -> str:
    """Where a capitalised word stands: "mid" (checked strictly), "after" a colon or dash,
    in a "label" of up to four words before a colon that opens the sentence ("Sister:",
    "Favourite Food:"), or "first" of its sentence."""
    start = _sentence_start(text, match.start())
    label = _LABEL.match(text, start)
    if label is not None and label.start("label") <= match.start() < label.end("label"):
        if any(w[0].islower() for w in label.group("label").split()):
            return "label-phrase"  # "Delivery address:", "Favourite food:": ordinary words
        return "label"
    lead = text[start:match.start()]
    if lead.strip(_OPENERS):
        return "after" if lead.rstrip().endswith((":", ";", "—", "–", " -")) else "mid"
    return "first"


def _subject(text: str, match: re.Match[str]) -> bool:
    """Does the first word of a sentence read as its subject ("Bob is", "Bob's", "Bob,", "Bob Smith", "Bob")?"""
    if match.group().lower().endswith("'s"):
        return True
    rest = text[match.end():]
    if re.match(r"\s*(?:,|$|[.!?;]\s)", rest) or not rest.strip(" .!?"):
        return True
    following = _WORD.match(rest.lstrip())
    if following is None:
        return False
    word = following.group()
    return word[0].isupper() or word.lower() in _SUBJECT_NEXT


def _name_grounded(text: str, match: re.Match[str], grounds: _Grounds) -> bool:
    word = _word(match.group())
    if word in _NEVER_NAMES or word in grounds.words or word.replace("-", "") in grounds.words:
        return True
    named = [fold(p) for p in match.group().split("-") if p and p[0].isupper()]
    if "-" in word and all(_word(p) in grounds.words or _word(p) in _NEVER_NAMES for p in named):
        return True  # "Jean-Luc" from "Jean Luc", "Porto-based" from "Porto": only its capitalised parts are names
    place = _place(text, match)
    if place == "mid":
        return False
    if place == "label-phrase":
        return True
    loosely = stem(word) in grounds.stems or word in _ORDINARY or word.replace("-", "") in _ORDINARY
    if place == "first":
        return loosely or not _subject(text, match)
    return loosely


def _number_grounded(match: re.Match[str], grounds: _Grounds) -> bool:
    value = match.group().rstrip("kK")
    if _digits(value) in grounds.numbers or _thousands(match) in grounds.numbers:
        return True
    groups = re.findall(r"\d+", value)
    if re.search(r"\d\s?[-/]\s?\d", value):  # a range or a fraction: "3-4 days", "2/3": each end on its own
        return all(_digits(g) in grounds.numbers for g in groups)
    return False


def find_ungrounded(text: str, sources: Sequence[Source]) -> tuple[Ungrounded, ...]:
    """The parts of ``text`` that none of ``sources`` holds; empty when the note is grounded.

    Parts are found and blanked out in order (e-mail addresses, links, dates, times,
    numbers), so that the digits of a date are not read again as a number; what remains is
    read for capitalised names.
    """
    grounds = _Grounds.of(sources)
    text = _clean(text)
    missing: list[Ungrounded] = []
    for match in list(_EMAIL.finditer(text)):
        if match.group().casefold() not in grounds.emails:
            missing.append(Ungrounded("email", match.group()))
        text = _blank(text, match.start(), match.end())
    for match in list(_LINK.finditer(text)):
        if _link(match.group()) not in grounds.links:
            missing.append(Ungrounded("link", match.group()))
        text = _blank(text, match.start(), match.end())
    for span in when.dates_in(text):
        value = text[span.start:span.end]
        fraction = re.fullmatch(r"(\d{1,2})/(\d{1,2})", value)  # "4/5 days" from "4 out of 5 days"
        if not any(when.date_grounded(v, grounds.dates, grounds.sent_years, list(grounds.windows)) for v in span.dates) \
                and _digits(value) not in grounds.numbers \
                and not (fraction and all(_digits(g) in grounds.numbers for g in fraction.groups())):
            missing.append(Ungrounded("date", value))
        text = _blank(text, span.start, span.end)
    for span in when.times_in(text):
        value = text[span.start:span.end]
        duration = re.fullmatch(r"\d{1,2}\s*h", value, re.I)  # "2h" may be hours spent, not a time of day
        if not span.times & grounds.times and not (duration and _digits(value) in grounds.numbers):
            missing.append(Ungrounded("time", value))
        text = _blank(text, span.start, span.end)
    for match in list(_NUMBER.finditer(text)):
        if not _number_grounded(match, grounds):
            missing.append(Ungrounded("number", match.group()))
        text = _blank(text, match.start(), match.end())
    for match in _WORD.finditer(text):
        if any(c.isupper() for c in match.group()) and not _name_grounded(text, match, grounds):
            missing.append(Ungrounded("name", match.group()))
    return tuple(missing)


def describe(missing: Sequence[Ungrounded]) -> str:
    """One short reason for the agent: which parts, at most three of them."""
    shown = ", ".join(f"{m.kind} {m.value!r}" for m in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return f"ungrounded: the text's {shown}{more} is not in a cited owner message"
