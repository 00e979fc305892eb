"""Settings come from the environment and .env; enabled parts need their secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import Settings, load_settings, variable_names
from core.errors import ConfigError


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The process environment with none of Nod's variables, and a way to load with just some set."""
    def clear() -> None:
        for name in [*variable_names(), "NOD_MAX_CONCURRENT_TURNS"]:
            monkeypatch.delenv(name, raising=False)

    clear()

    def load(values: dict[str, str], env_file: Path | None = None) -> Settings:
        clear()
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        return load_settings(env_file=env_file)
    return load


def test_defaults_are_the_embedded_setup_in_the_data_directory(environ, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = environ({"NOD_HOME": str(tmp_path / "data")})
    assert settings.database_url == f"sqlite+aiosqlite:///{tmp_path / 'data' / 'nod.db'}"  # not ./nod.db (issue 43: 9)
    assert settings.home == str(tmp_path / "data")
    assert (settings.host, settings.port, settings.log_text) == ("127.0.0.1", 8080, False)


def test_the_data_directory_defaults_to_the_platforms_place_for_application_data() -> None:
    from bot.home import default_home

    user = Path("/home/ana")
    assert default_home({}, "linux", user) == user / ".local/share/nod"
    assert default_home({"XDG_DATA_HOME": "/data"}, "linux", user) == Path("/data/nod")
    assert default_home({"XDG_DATA_HOME": "relative"}, "linux", user) == user / ".local/share/nod"  # the spec ignores it
    assert default_home({}, "darwin", user) == user / "Library/Application Support/nod"
    assert default_home({"LOCALAPPDATA": "C:/Users/ana/AppData/Local"}, "win32", user) == Path("C:/Users/ana/AppData/Local/nod")


def test_the_env_file_is_read_from_the_data_directory_and_the_database_url_still_wins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, environ) -> None:  # type: ignore[no-untyped-def]
    environ({})
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / ".env").write_text("NOD_PORT=9001\n")
    (tmp_path / ".env").write_text("NOD_PORT=9002\n")  # the working directory's is not read
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NOD_HOME", str(tmp_path / "data"))
    assert load_settings().port == 9001
    monkeypatch.setenv("NOD_DATABASE_URL", "postgresql+asyncpg://nod@db/nod")
    assert load_settings().database_url == "postgresql+asyncpg://nod@db/nod"


def test_every_missing_setting_of_an_enabled_part_is_named_at_once(environ) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as caught:
        environ({"TWILIO_ACCOUNT_SID": "AC1"})
    assert str(caught.value) == ("TWILIO_ACCOUNT_SID is set, so TWILIO_AUTH_TOKEN, TWILIO_WHATSAPP_FROM and "
                                 "NOD_PUBLIC_URL must be set too.")


def test_env_file_is_read_and_the_environment_wins(tmp_path: Path, environ) -> None:  # type: ignore[no-untyped-def]
    env_file = tmp_path / ".env"
    env_file.write_text("NOD_PORT=9000\nNOD_HOST=0.0.0.0\nNOD_AGENT_MODEL=\n")
    settings = environ({"NOD_PORT": "9100"}, env_file)
    assert (settings.host, settings.port) == ("0.0.0.0", 9100)


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"TELEGRAM_WEBHOOK_URL": "https://x", "TELEGRAM_BOT_TOKEN": "t"}, "TELEGRAM_WEBHOOK_SECRET"),
        ({"TWILIO_ACCOUNT_SID": "AC1"}, "TWILIO_AUTH_TOKEN"),
        ({"TWILIO_ACCOUNT_SID": "AC1", "TWILIO_AUTH_TOKEN": "a", "TWILIO_WHATSAPP_FROM": "w"}, "NOD_PUBLIC_URL"),
        ({"NOD_AGENT_MODEL": "gpt"}, "OPENAI_API_KEY"),
        ({"NOD_TRANSCRIBE_MODEL": "whisper-1"}, "OPENAI_API_KEY"),
        ({"NOD_PORT": "eighty"}, "NOD_PORT"),
        ({"GOOGLE_CLIENT_ID": "id"}, "GOOGLE_CLIENT_SECRET"),
        ({"GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "s", "NOD_PUBLIC_URL": "https://x"}, "NOD_SECRET_KEY"),
        ({"GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "s", "NOD_SECRET_KEY": "k" * 32}, "NOD_PUBLIC_URL"),
    ],
)
def test_missing_or_bad_settings_name_the_variable(given: dict[str, str], named: str, environ) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=named):
        environ(given)


def test_a_local_model_server_needs_no_key(environ) -> None:  # type: ignore[no-untyped-def]
    settings = environ({"NOD_AGENT_MODEL": "llama3", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"})
    assert settings.agent_model == "llama3"


def test_transcription_has_its_own_server_and_key_or_uses_the_models(environ) -> None:  # type: ignore[no-untyped-def]
    local = environ({"NOD_TRANSCRIBE_MODEL": "Systran/faster-whisper-small",
                     "NOD_TRANSCRIBE_BASE_URL": "http://127.0.0.1:8000/v1"})
    assert (local.transcribe_model, local.transcribe_base_url, local.transcribe_api_key) == (
        "Systran/faster-whisper-small", "http://127.0.0.1:8000/v1", None)
    shared = environ({"NOD_TRANSCRIBE_MODEL": "whisper-1", "OPENAI_API_KEY": "sk-test"})
    assert shared.transcribe_model == "whisper-1" and shared.transcribe_base_url is None
    assert Settings().transcribe_model is None  # voice notes off by default


def test_logging_silences_libraries_that_would_log_sql_parameters() -> None:
    import logging

    from bot.logs import configure_logging

    configure_logging("DEBUG")
    assert logging.getLogger("aiosqlite").getEffectiveLevel() >= logging.WARNING
    assert logging.getLogger("sqlalchemy.engine").getEffectiveLevel() >= logging.WARNING


def test_model_settings_are_parsed_and_checked(environ) -> None:  # type: ignore[no-untyped-def]
    settings = environ({
        "NOD_JSON_MODE": "json_object", "NOD_MEMORY_DEADLINE_SECONDS": "7.5",
        "NOD_SPENDING_LIMIT_USD": "none", "NOD_MODEL_PRICES": '{"llama3": [0.1, 0.2]}',
    })
    assert (settings.json_mode, settings.memory_deadline_s, settings.spending_limit_usd) == ("json_object", 7.5, None)
    assert settings.model_prices == (("llama3", 0.1, 0.2),)
    assert Settings().spending_limit_usd == 10.0


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("NOD_JSON_MODE", "xml"),
        ("NOD_MEMORY_DEADLINE_SECONDS", "0"),
        ("NOD_MEMORY_DEADLINE_SECONDS", "none"),
        ("NOD_SPENDING_LIMIT_USD", "-3"),
        ("NOD_MODEL_PRICES", "[1, 2]"),
        ("NOD_MODEL_PRICES", '{"m": [1]}'),
        ("NOD_JSON_STRICT", "maybe"),
        ("NOD_WORK_SLOTS", "0"),
        ("NOD_AGENT_CONTEXT_TOKENS", "lots"),
        ("NOD_OPEN_SIGNUP", "perhaps"),
        ("NOD_MODEL_PRICES", '{"a": [NaN, -5]}'),
        ("NOD_LOG_LEVEL", "loud"),
        ("NOD_PUBLIC_URL", "notaurl"),
        ("NOD_SECRET_KEY", "x"),
        ("NOD_MEMORY_DEADLINE_SECONDS", "inf"),
    ],
)
def test_bad_model_settings_fail_with_a_sentence_naming_the_variable(name: str, raw: str, environ) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=name) as caught:
        environ({name: raw})
    assert str(caught.value).endswith(".") and "\n" not in str(caught.value)  # one sentence


def test_the_older_name_of_work_slots_is_still_read_and_the_new_one_wins(environ) -> None:  # type: ignore[no-untyped-def]
    assert environ({"NOD_MAX_CONCURRENT_TURNS": "5"}).work_slots == 5
    assert environ({"NOD_WORK_SLOTS": "3"}).work_slots == 3


def test_settings_made_in_code_read_nothing_from_the_environment(environ, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("NOD_PORT", "9999")
    assert Settings().port == 8080 and Settings(port=81).port == 81


def test_an_env_file_that_is_not_utf8_is_named_in_one_sentence(tmp_path: Path, environ) -> None:  # type: ignore[no-untyped-def]
    env_file = tmp_path / ".env"
    env_file.write_bytes(b"NOD_PORT=80\nNOD_HOST=caf\xe9\n")
    with pytest.raises(ConfigError, match=r"\.env is not UTF-8 text"):
        environ({}, env_file)
