"""``nod gmail connect|disconnect|refresh --owner NAME`` as the shell runs them (in process, ``bot.cli.main``)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.cli_runner import one_sentence
from tests.integration.cli.conftest import Nod

GOOGLE = {"GOOGLE_CLIENT_ID": "nod-test.apps.googleusercontent.com", "GOOGLE_CLIENT_SECRET": "s3cret",
          "NOD_SECRET_KEY": "k" * 32, "NOD_PUBLIC_URL": "https://nod.example.com"}


def test_without_a_google_client_each_command_is_one_sentence_naming_the_settings(here: Path, cli: Nod) -> None:
    assert cli("owners", "add", "maya").returncode == 0
    for verb in ("connect", "disconnect", "refresh"):
        result = cli("gmail", verb, "--owner", "maya")
        assert result.returncode == 1 and "GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, NOD_SECRET_KEY and NOD_PUBLIC_URL" in one_sentence(result)
    assert cli("gmail", "connect").returncode == 2  # --owner is required
    assert cli("gmail", "connect", "--owner", "maya", GOOGLE_CLIENT_ID="x").returncode == 1  # no secret: refused at start


def test_connect_prints_googles_consent_link_for_gmail_readonly_and_the_callback(here: Path, cli: Nod) -> None:
    assert cli("owners", "add", "maya").returncode == 0
    result = cli("gmail", "connect", "--owner", "maya", **GOOGLE)
    assert result.returncode == 0
    url = result.stdout.strip()
    asked = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert url.startswith("https://accounts.google.com/o/oauth2/auth?")
    assert asked["scope"] == "https://www.googleapis.com/auth/gmail.readonly"
    assert asked["redirect_uri"] == "https://nod.example.com/oauth/google/callback" and asked["state"]
    assert "15 minutes" in result.stderr
    assert cli("gmail", "connect", "--owner", "nobody", **GOOGLE).returncode == 1


def test_disconnect_and_refresh_without_a_connection_say_so(here: Path, cli: Nod) -> None:
    assert cli("owners", "add", "maya").returncode == 0
    for verb in ("disconnect", "refresh"):
        result = cli("gmail", verb, "--owner", "maya", **GOOGLE)
        assert result.returncode == 1 and one_sentence(result) == "nod: Gmail is not connected."
