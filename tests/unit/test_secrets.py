"""The one secrets module: what it must catch and the ordinary text it must let through."""

from __future__ import annotations

import random

import pytest

from core.secrets import find_secret

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
