"""The writing style's pure parts: which mail and which words are the owner's, the server's check, the save rule."""

from __future__ import annotations

import base64
import logging
from datetime import UTC, datetime

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from adapters.gmail.mail import parse_message
from adapters.web.app import PathOnlyAccessLog
from core.errors import MailAccessLost
from core.gmail.check import MAX_STYLE_CHARS, refusal, sampled_names
from core.gmail.cipher import TokenCipher
from core.gmail.sampling import Samples, is_automated, is_forwarded, own_words, select
from core.gmail.style import STYLE_PATH, save_style
from core.gmail.values import MailMessage
from core.memory import document as ops
from core.memory.render import label_of, render_export
from core.memory.values import EMAIL_STYLE_LABEL, MemoryDocument, Origin, Status

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def _mail(text: str, **headers: str) -> MailMessage:
    base = {"From": "Maya Costa <maya@example.com>", "To": "Ana <ana@example.org>", "Subject": "Hello"}
    return MailMessage(tuple({**base, **{k.replace("_", "-"): v for k, v in headers.items()}}.items()), text)


@pytest.mark.parametrize("history", [
    "On Mon, 30 Nov 2026 at 09:12, Ana <ana@example.org> wrote:\n> the budget\n",
    "On Mon, 30 Nov 2026 at 09:12 Ana Silva <ana.silva@example.org>\nwrote:\n\nthe budget\n",  # Gmail's wrapped line
    "-----Original Message-----\nFrom: Ana\nSent: Monday\nthe budget\n",
    "From: Ana Silva <ana@example.org>\nSent: Monday, 30 November 2026 09:12\nthe budget\n",  # Outlook
    "Em seg., 30 de nov. de 2026 às 09:12, Ana <ana@example.org> escreveu:\nthe budget\n",
    "Le lun. 30 nov. 2026 à 09:12, Ana <ana@example.org> a écrit :\nthe budget\n",
    "> the budget\n",
])
def test_the_reply_history_and_quoted_lines_are_not_the_owners_words(history: str) -> None:
    assert own_words(f"Sounds good, see you then.\n\nBest,\nMaya\n\n{history}") == "Sounds good, see you then.\n\nBest,\nMaya"


def test_a_quoted_line_inside_the_owners_text_goes_too_and_so_does_the_signature_block() -> None:
    assert own_words("Yes:\n> can you come?\nI can.") == "Yes:\nI can."
    assert own_words("See you.\nMaya\n-- \nMaya Costa | +351 912 345 678") == "See you.\nMaya"


def test_the_owner_writing_on_and_wrote_in_a_sentence_is_not_history() -> None:
    text = "On Friday I wrote: the plan is fine.\nMaya"
    assert own_words(text) == text


@pytest.mark.parametrize("mail", [
    _mail("I am away.", Auto_Submitted="auto-replied"),
    _mail("I am away.", Subject="Automatic reply: Hello"),
    _mail("I am away.", Subject="Out of Office: back Monday"),
    _mail("I am away.", X_Autoreply="yes"),
    _mail("Our news.", List_Unsubscribe="<mailto:x@list.example>"),
    _mail("Our news.", List_Id="<club.list.example>"),
    _mail("Our news.", Precedence="bulk"),
    _mail("Your order.", From="Shop <no-reply@shop.example>"),
    _mail("Your order.", To="noreply@shop.example"),
    _mail("Maya accepted.", Subject="Accepted: Planning"),
    _mail("Invitation to planning.", Subject="Invitation: Planning @ Tue"),
    MailMessage((("Subject", "Planning"),), "See you", calendar=True),
])
def test_automated_mail_is_left_out(mail: MailMessage) -> None:
    assert is_automated(mail)


def test_ordinary_mail_is_not_automated_and_auto_submitted_no_is_a_person() -> None:
    assert not is_automated(_mail("See you at lunch."))
    assert not is_automated(_mail("See you at lunch.", Auto_Submitted="no"))


@pytest.mark.parametrize("mail", [
    _mail("FYI", Subject="Fwd: the invoice"),
    _mail("FYI", Subject="FW: the invoice"),
    _mail("FYI\n\n---------- Forwarded message ---------\nFrom: Billing"),
    _mail("See below.\n\nBegin forwarded message:\n\nFrom: Billing"),
])
def test_forwarded_mail_is_left_out(mail: MailMessage) -> None:
    assert is_forwarded(mail)


def test_select_counts_what_it_leaves_out_and_skips_mail_with_a_secret() -> None:
    chosen = select([_mail("Hi Ana, see you soon.\nMaya"), _mail("FYI", Subject="Fwd: x"), _mail("> only quoted"),
                     _mail("My card is 4111 1111 1111 1111, thanks"), _mail("News", Precedence="list")])
    assert chosen.texts == ("Hi Ana, see you soon.\nMaya",) and chosen.skipped == 4


def _samples(*texts: str) -> Samples:
    mails = tuple(_mail(t, To="Rui Sousa <rui.sousa@example.net>") for t in texts)
    return Samples(texts, 0, mails)


def test_names_come_from_headers_greetings_sign_offs_and_mid_sentence_capitals() -> None:
    names = sampled_names(_samples("Hi Ana,\nthe trip to Porto is on. Thanks, Leo.\n\nBest,\nMaya Costa"))
    assert {"Ana", "Porto", "Leo", "Maya", "Costa", "Rui", "Sousa"} <= names
    assert not names & {"Hi", "Best", "Thanks", "The"}


STYLE = "Writes short, warm emails in English; greets with Hi and a first name, signs off with Best. Few commas."


@pytest.mark.parametrize(("style", "why"), [
    (STYLE, None),
    ("x" * (MAX_STYLE_CHARS + 1), "too_long"),
    ("", "empty"),
    ("Writes to ana@example.org often.", "email_address"),
    ("Gives +351 912 345 678 as a number.", "phone_number"),
    ("Meets at 3 usually.", "number"),
    ("Mentions Porto a lot.", "name"),
    ("Greets Ana by name.", "name"),
    ("Often says the trip to porto is on.", "name"),  # a name in lower case is still the name
    ("signs off as maya.", "name"),
    ("Signs off as MAYA.", "name"),
    ("Often writes to Ana's team.", "name"),
    ("Sign-off: Maya-style.", "name"),
    ("Her number is nine one two three.", "number"),
    ("Budget of forty-five thousand euros.", "number"),
])
def test_the_server_check_refuses_length_and_every_kind_of_fact(style: str, why: str | None) -> None:
    assert refusal(style, _samples("Hi Ana,\nthe trip to Porto is on at 3pm.\n\nBest,\nMaya")) == why


def test_four_words_in_a_row_from_the_mails_are_a_quote() -> None:
    assert refusal("Often says see you all soon.", _samples("Lovely news, see you all soon then.")) == "quote"


def test_a_number_absent_from_the_mails_is_not_a_fact_of_theirs() -> None:
    assert refusal("Usually two or three sentences; 2 paragraphs at most.", _samples("See you soon.")) is None


def test_a_new_style_archives_an_email_learned_one_and_leaves_any_other_alone() -> None:
    first = save_style(MemoryDocument(), STYLE, NOW)
    entry = first.document.get(STYLE_PATH)
    assert first.result.saved and entry is not None
    assert (entry.origin, entry.status, label_of(entry)) == (Origin.EMAIL, Status.OBSERVED, EMAIL_STYLE_LABEL)
    second = save_style(first.document, "Writes long, formal emails.", NOW)
    assert second.document.get(STYLE_PATH).text == "Writes long, formal emails."  # type: ignore[union-attr]
    assert [r.entry.text for r in second.document.archive] == [STYLE]
    same = save_style(second.document, "Writes long, formal emails.", NOW)
    assert same.document is second.document  # nothing new: nothing written
    for origin in (Origin.STATED, Origin.INFERRED):
        mine = ops.add_entry(MemoryDocument(), ops.make_entry(STYLE_PATH, "I write formally.", origin=origin, now=NOW))
        kept = save_style(mine, STYLE, NOW)
        assert kept.document is mine and not kept.result.saved and "never replaces" in (kept.result.why_not or "")
    assert f"({EMAIL_STYLE_LABEL})" in render_export(first.document, "Maya")


def test_the_token_cipher_round_trips_and_a_changed_key_reads_as_a_lost_grant() -> None:
    sealed = TokenCipher("one key").seal("1//refresh-token")
    assert "refresh-token" not in sealed and TokenCipher("one key").open(sealed) == "1//refresh-token"
    with pytest.raises(MailAccessLost):
        TokenCipher("another key").open(sealed)


def _part(mime: str, text: str, filename: str = "") -> dict[str, object]:
    return {"mimeType": mime, "filename": filename,
            "body": {"data": base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")}}


def test_a_gmail_message_decodes_to_its_plain_text_headers_and_calendar_flag() -> None:
    raw = {"payload": {"mimeType": "multipart/mixed", "headers": [{"name": "Subject", "value": "Olá"}], "parts": [
        {"mimeType": "multipart/alternative", "parts": [_part("text/plain", "Olá, até já 👋"), _part("text/html", "<p>x</p>")]},
        _part("text/plain", "attached notes", filename="notes.txt")]}}
    decoded = parse_message(raw)
    assert (decoded.text, decoded.header("subject"), decoded.calendar) == ("Olá, até já 👋", "Olá", False)
    html_only = parse_message({"payload": {"mimeType": "text/html", "body": _part("text/html", "")["body"], "parts": [
        _part("text/html", "<div>Hi&nbsp;there<br>Maya</div><blockquote>old</blockquote>"),
        _part("text/calendar", "BEGIN:VCALENDAR")]}})
    assert html_only.text == "Hi\xa0there\nMaya" and html_only.calendar


def test_the_access_log_keeps_no_query_string(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    request = make_mocked_request("GET", "/oauth/google/callback?state=s&code=4/one-time-code")
    PathOnlyAccessLog(logging.getLogger("aiohttp.access"), "").log(request, web.Response(status=303), 0.01)
    assert "GET /oauth/google/callback 303" in caplog.text and "one-time-code" not in caplog.text
