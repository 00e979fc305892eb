"""Settings come from the environment and .env; enabled parts need their secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import load_settings
from core.errors import ConfigError


def test_defaults_are_the_embedded_setup() -> None:
    settings = load_settings({}, env_file=None)
    assert settings.database_url == "sqlite+aiosqlite:///nod.db"
    assert (settings.host, settings.port, settings.log_text) == ("127.0.0.1", 8080, False)


def test_env_file_is_read_and_the_environment_wins(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("NOD_PORT=9000\nNOD_HOST=0.0.0.0\n")
    settings = load_settings({"NOD_PORT": "9100"}, env_file=env_file)
    assert (settings.host, settings.port) == ("0.0.0.0", 9100)


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"TELEGRAM_WEBHOOK_URL": "https://x", "TELEGRAM_BOT_TOKEN": "t"}, "TELEGRAM_WEBHOOK_SECRET"),
        ({"TWILIO_ACCOUNT_SID": "AC1"}, "TWILIO_AUTH_TOKEN"),
        ({"TWILIO_ACCOUNT_SID": "AC1", "TWILIO_AUTH_TOKEN": "a", "TWILIO_WHATSAPP_FROM": "w"}, "NOD_PUBLIC_URL"),
        ({"NOD_AGENT_MODEL": "gpt"}, "OPENAI_API_KEY"),
        ({"NOD_TRANSCRIBE_MODEL": "whisper-1"}, "OPENAI_API_KEY"),
        ({"NOD_PORT": "eighty"}, "NOD_PORT"),
    ],
)
def test_missing_or_bad_settings_name_the_variable(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        load_settings(environ, env_file=None)


def test_a_local_model_server_needs_no_key() -> None:
    settings = load_settings({"NOD_AGENT_MODEL": "llama3", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, env_file=None)
    assert settings.agent_model == "llama3"


def test_transcription_has_its_own_server_and_key_or_uses_the_models() -> None:
    local = load_settings({"NOD_TRANSCRIBE_MODEL": "Systran/faster-whisper-small",
                           "NOD_TRANSCRIBE_BASE_URL": "http://127.0.0.1:8000/v1"}, env_file=None)
    assert (local.transcribe_model, local.transcribe_base_url, local.transcribe_api_key) == (
        "Systran/faster-whisper-small", "http://127.0.0.1:8000/v1", None)
    shared = load_settings({"NOD_TRANSCRIBE_MODEL": "whisper-1", "OPENAI_API_KEY": "sk-test"}, env_file=None)
    assert shared.transcribe_model == "whisper-1" and shared.transcribe_base_url is None
    assert load_settings({}, env_file=None).transcribe_model is None  # voice notes off by default


def test_logging_silences_libraries_that_would_log_sql_parameters() -> None:
    import logging

    from bot.logs import configure_logging

    configure_logging("DEBUG")
    assert logging.getLogger("aiosqlite").getEffectiveLevel() >= logging.WARNING
    assert logging.getLogger("sqlalchemy.engine").getEffectiveLevel() >= logging.WARNING


def test_model_settings_are_parsed_and_checked() -> None:
    settings = load_settings({
        "NOD_JSON_MODE": "json_object", "NOD_MEMORY_DEADLINE_SECONDS": "7.5",
        "NOD_SPENDING_LIMIT_USD": "none", "NOD_MODEL_PRICES": '{"llama3": [0.1, 0.2]}',
    }, env_file=None)
    assert (settings.json_mode, settings.memory_deadline_s, settings.spending_limit_usd) == ("json_object", 7.5, None)
    assert settings.model_prices == (("llama3", 0.1, 0.2),)
    assert load_settings({}, env_file=None).spending_limit_usd == 10.0


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("NOD_JSON_MODE", "xml"),
        ("NOD_MEMORY_DEADLINE_SECONDS", "0"),
        ("NOD_MEMORY_DEADLINE_SECONDS", "none"),
        ("NOD_SPENDING_LIMIT_USD", "-3"),
        ("NOD_MODEL_PRICES", "[1, 2]"),
        ("NOD_MODEL_PRICES", '{"m": [1]}'),
    ],
)
def test_bad_model_settings_fail_with_a_sentence_naming_the_variable(name: str, raw: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_settings({name: raw}, env_file=None)
