"""The one secrets module: what it must catch and the ordinary text it must let through."""

from __future__ import annotations

import random

import pytest

from core.secrets import find_secret
from core.skills.scrub import scrub

SECRETS = [
    ("card 4111 1111 1111 1111", "card number"),
    ("card 4111-1111-1111-1111", "card number"),
    ("card 4111.1111.1111.1111", "card number"),
    ("card 4111_1111_1111_1111", "card number"),
    ("card 4111/1111/1111/1111", "card number"),
    ("card 4111 – 1111 – 1111 – 1111", "card number"),
    ("card 4111111111111111", "card number"),
    ("amex 3782 822463 10005", "card number"),
    ("about 4111 1111 1111 1111", "card number"),  # a slug's words
    ("on 2024-05-08 paid with 4111 1111 1111 1111 ok", "card number"),
    *[(f"card 4111{sep}1111{sep}1111{sep}1111", "card number")
      for sep in (",", ":", "+", "|", "*", "'", "#", "~", "=", ";", ", ", "  -  ", "\u200b", "\u2060", "\ufeff", "\u00ad")],
    ("card ４１１１ １１１１ １１１１ １１１１", "card number"),  # full-width digits
    ("the PIN 4821 for the door", "password"),
    ("wifi pass hunter2xyz", "password"),
    ("example.com/login?token=abc123", "link with a login"),
    ("5500005555555559 is my card", "card number"),
    ("AKIAIOSFODNN7EXAMPLE", "key or token"),
    ("key sk-proj-abcdefghijklmnopqrstuvwx123", "key or token"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "key or token"),
    ("xoxb-1234567890-abcdefghij", "key or token"),
    ("sk_live_abcdefghijklmnop1234", "key or token"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIE...", "private key"),
    ("Authorization: Bearer abcdef1234567890abcdef", "bearer token"),
    ("my password is hunter2", "password"),
    ("https://bob:pw@example.com/x", "link with a login"),
    ("https://example.com/reset?token=abc", "link with a login"),
    ("https://app.example.com/magic-link/AbCdEf0123456789xyz", "link with a login"),
    ("use Zq8Lm2Xv9Rt4Kp7Wn3Bs6Hd1Fg5Jc0Ya", "key or token"),
]

ORDINARY = [
    "My sister Ana lives in Porto",
    "Call me at +351 912 345 678",
    "The flight is on 2024-05-01 at 10:00",
    "pi is 3.141592653589793",
    "4111 1111 1111 1112 fails the Luhn check",
    "two numbers 912345678 and 912345679",
    "pass the salt please",
    "I have 2 kids, born 1990 and 1992",
    "see www.example.com/about",
    "Order 1234567 arrives tomorrow",
    "see https://example.com/recipes?page=2",
    "internationalization-and-localization-guidelines-document",
    "1111 1111 1111 1111",
]


@pytest.mark.parametrize(("text", "kind"), SECRETS)
def test_secrets_are_found(text: str, kind: str) -> None:
    assert find_secret(text) == kind


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_passes(text: str) -> None:
    assert find_secret(text) is None


def test_the_quick_marks_never_change_what_is_found() -> None:
    """An ASCII text skips patterns it cannot match; a non-ASCII one runs them all: same answers."""
    fragments = ["my PIN 4821", "PASSWORD: x", "Pass hunter2", "4111 1111 1111 1111", "sk-proj-" + "a1" * 12,
                 "ghp_" + "b2" * 16, "AWS secret " + "Ab1/" * 10, "Bearer " + "t0k" * 8, "https://x.io/a?token=1",
                 "example.com/login?code=99", "-----BEGIN PRIVATE KEY-----", "eyJ" + "a" * 12 + "." + "b" * 12 + "." + "c" * 12,
                 "we met at 10", "see you/then", "plain words only", "Q7xR2mK9pL4sT8vW1yZ3bN6cF0hJ5dG", "AKIA" + "A1" * 8]
    rng = random.Random(5)
    for _ in range(2_000):
        text = " ".join(rng.choice(fragments) for _ in range(rng.randint(1, 3)))
        assert find_secret(text) == find_secret(text + " é"), text


# Secrets as people write them (issue 39: 8): each was saved before by `nod memory add`, import, the page and skills.
SAID = [
    ("https://example.com/reset-password/9f8e7d6c5b4a39281706", "link with a login"),
    ("reset it here: example.com/reset-password/9f8e7d6c5b4a39281706abcd", "link with a login"),  # no scheme
    ("https://app.example.com/verify-email/550e8400-e29b-41d4-a716-446655440000", "link with a login"),  # a UUID
    ("https://shop.example.com/account/confirm/Zq8Lm2Xv9Rt4Kp7Wn3Bs", "link with a login"),
    ("join via https://example.com/invite/AbCdEfGhIjKlMnOpQrStUvWxYz", "link with a login"),
    ("https://example.com/activate/7f3a9c2e4b8d1f6a", "link with a login"),
    ("https://example.com/welcome#access_token=abc", "link with a login"),  # a token in the fragment
    ("https://example.com/magic/ab12cd34ef56gh78ij90", "link with a login"),
    ("4111 1111 then 1111 1111", "card number"),
    ("card 4111 1111, then 1111 1111 and the cvv later", "card number"),
    ("my card is 5500 0055 and then 5555 5559", "card number"),
    ("amex 3782 822463 and 10005", "card number"),
    ("Password for the wifi: hunter2hunter2", "password"),
    ("wifi password is correcthorse9", "password"),
    ("my password is sunshine", "password"),
    ("Password: sunshine", "password"),
    ("the door code is 4821", "password"),
    ("PIN for the card: 1234", "password"),
    ("Alarm code = 9911", "password"),
    ("gate code 1357#", "password"),
    ("The wifi network key: GreenTea-42", "password"),
    ("The wifi is MyHome, password hunter22", "password"),
    ("senha do wifi: batata123", "password"),
]

# Ordinary memory that must stay savable: the words of a secret without one, numbers that are not cards.
ORDINARY_MEMORY = [
    "my PIN changed last week",
    "the code review is on Monday",
    "I forgot the door code",
    "the door code changed on 12/05",
    "the wifi password is on the fridge",
    "my password is the same as before",
    "zip code is 4050-123",
    "I need to pass 2 exams",
    "my bus pass is valid until May",
    "Password manager: 1Password",
    "PIN code changes every 90 days",
    "I noticed a spiderman pin on your purse. Is Spider-Man your favourite?",
    "Call me at +351 912 345 678 or 912 345 679",
    "Flights 3456 and 4567 cost 1200 and 1300 euros",
    "Order 4411 then order 5522, both 1,299.00 EUR",
    "On 2024-05-01 at 10:00 we paid 1234 then 5678",
    "Dentist on 12 May 2025 at 14:30, room 4121",
    "My card ends in 1111",
    "Born 1990, married 2015, kids 2018 and 2021",
    "https://example.com/blog/how-to-reset-your-password-in-2024",
    "https://example.com/invite/friends",
    "https://docs.example.com/auth/oauth2-guide-v2",
    "https://github.com/org/repo/commit/9f8e7d6c5b4a39281706abcdef",
    "reset the router on Monday",
    "Invited 12 friends, 4 confirmed",
    "Meeting codes are on the shared drive",
]


def test_the_tables_have_at_least_twenty_rows_each_way() -> None:
    assert len(SAID) >= 20 and len(ORDINARY_MEMORY) >= 20


@pytest.mark.parametrize(("text", "kind"), SAID)
def test_secrets_as_people_write_them_are_found(text: str, kind: str) -> None:
    assert find_secret(text) == kind


@pytest.mark.parametrize("text", ORDINARY_MEMORY)
def test_ordinary_memory_is_not_a_secret(text: str) -> None:
    assert find_secret(text) is None


def test_a_skill_draft_loses_the_secret_itself_and_keeps_its_words() -> None:
    """Scrubbed before the memory model sees the draft: the value goes, the sentence stays."""
    draft = ("Password for the wifi: hunter2hunter2\nPay with 4111 1111 then 1111 1111 at checkout\n"
             "Open https://example.com/reset-password/9f8e7d6c5b4a39281706 and set a new one")
    assert scrub(draft) == ("Password for the wifi: <password>\nPay with <card number> <card number> then <card number> "
                            "<card number> at checkout\nOpen <login link> and set a new one")
