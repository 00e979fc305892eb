"""Settings, read once from the environment and an optional ``.env`` file.

Nothing else in Nod reads ``os.environ``: the settings value is built here and passed
down. A part that is enabled but misses its secret fails at start with one sentence
naming the variable, instead of failing later in the middle of a conversation.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dotenv import dotenv_values

from core.errors import ConfigError
from core.storage.database import DEFAULT_URL


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_URL
    host: str = "127.0.0.1"
    port: int = 8080
    public_url: str | None = None
    secret_key: str | None = None
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    agent_model: str | None = None
    memory_model: str | None = None
    memory_base_url: str | None = None
    memory_api_key: str | None = None
    transcribe_model: str | None = None  # voice notes: an OpenAI-compatible /v1/audio/transcriptions model
    transcribe_base_url: str | None = None
    transcribe_api_key: str | None = None
    telegram_bot_token: str | None = None
    telegram_webhook_url: str | None = None
    telegram_webhook_secret: str | None = None
    telegram_api_base_url: str | None = None
    twilio_account_sid: str | None = None
    twilio_auth_token: str | None = None
    twilio_whatsapp_from: str | None = None
    twilio_api_base_url: str | None = None
    json_mode: str = "json_schema"
    json_strict: bool = True  # send strict: true with json_schema (OpenAI enforces it; Ollama, llama.cpp ignore it)
    agent_context_tokens: int | None = None
    memory_deadline_s: float = 20.0
    spending_limit_usd: float | None = 10.0
    model_prices: tuple[tuple[str, float, float], ...] = ()
    open_signup: bool = False
    work_slots: int = 2  # turns doing server work at once; waiting for a model is not counted
    log_level: str | None = None  # unset: INFO for `nod run`, WARNING for one-shot commands
    log_text: bool = False


_VARIABLES = {
    "NOD_DATABASE_URL": "database_url",
    "NOD_HOST": "host",
    "NOD_PORT": "port",
    "NOD_PUBLIC_URL": "public_url",
    "NOD_SECRET_KEY": "secret_key",
    "OPENAI_API_KEY": "openai_api_key",
    "OPENAI_BASE_URL": "openai_base_url",
    "NOD_AGENT_MODEL": "agent_model",
    "NOD_MEMORY_MODEL": "memory_model",
    "NOD_MEMORY_BASE_URL": "memory_base_url",
    "NOD_MEMORY_API_KEY": "memory_api_key",
    "NOD_TRANSCRIBE_MODEL": "transcribe_model",
    "NOD_TRANSCRIBE_BASE_URL": "transcribe_base_url",
    "NOD_TRANSCRIBE_API_KEY": "transcribe_api_key",
    "TELEGRAM_BOT_TOKEN": "telegram_bot_token",
    "TELEGRAM_WEBHOOK_URL": "telegram_webhook_url",
    "TELEGRAM_WEBHOOK_SECRET": "telegram_webhook_secret",
    "TELEGRAM_API_BASE_URL": "telegram_api_base_url",
    "TWILIO_ACCOUNT_SID": "twilio_account_sid",
    "TWILIO_AUTH_TOKEN": "twilio_auth_token",
    "TWILIO_WHATSAPP_FROM": "twilio_whatsapp_from",
    "TWILIO_API_BASE_URL": "twilio_api_base_url",
    "NOD_JSON_MODE": "json_mode",
    "NOD_JSON_STRICT": "json_strict",
    "NOD_AGENT_CONTEXT_TOKENS": "agent_context_tokens",
    "NOD_MEMORY_DEADLINE_SECONDS": "memory_deadline_s",
    "NOD_SPENDING_LIMIT_USD": "spending_limit_usd",
    "NOD_MODEL_PRICES": "model_prices",
    "NOD_OPEN_SIGNUP": "open_signup",
    "NOD_WORK_SLOTS": "work_slots",
    "NOD_MAX_CONCURRENT_TURNS": "work_slots",  # the older name of NOD_WORK_SLOTS, still read
    "NOD_LOG_LEVEL": "log_level",
    "NOD_LOG_TEXT": "log_text",
}

_REQUIRED_WHEN = (
    ("TELEGRAM_WEBHOOK_URL", "TELEGRAM_WEBHOOK_SECRET"),
    ("TELEGRAM_WEBHOOK_URL", "TELEGRAM_BOT_TOKEN"),
    ("TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN"),
    ("TWILIO_ACCOUNT_SID", "TWILIO_WHATSAPP_FROM"),
    ("TWILIO_ACCOUNT_SID", "NOD_PUBLIC_URL"),
)


_OLDER_NAMES = frozenset({"NOD_MAX_CONCURRENT_TURNS"})  # read for compatibility, no longer documented


def variable_names() -> tuple[str, ...]:
    return tuple(name for name in _VARIABLES if name not in _OLDER_NAMES)


def _parse(name: str, raw: str) -> object:
    field = _VARIABLES[name]
    if field == "port":
        if not raw.isdigit() or not 0 < int(raw) < 65536:
            raise ConfigError(f"{name} must be a port number, not {raw!r}.")
        return int(raw)
    if field == "json_mode":
        if raw.strip() not in ("json_schema", "json_object"):
            raise ConfigError(f"{name} must be json_schema or json_object, not {raw!r}.")
        return raw.strip()
    if field in ("memory_deadline_s", "spending_limit_usd"):
        return _positive(name, raw, allow_none=field == "spending_limit_usd")
    if field == "model_prices":
        return _prices(name, raw)
    if field in ("agent_context_tokens", "work_slots"):
        if not raw.strip().isdigit() or int(raw) <= 0:
            raise ConfigError(f"{name} must be a positive whole number, not {raw!r}.")
        return int(raw)
    if field in ("log_text", "open_signup"):
        return raw.strip().lower() in {"1", "true", "yes", "on"}
    if field == "json_strict":
        return _switch(name, raw)
    return raw.strip()


def _switch(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name} must be true or false, not {raw!r}.")


def _positive(name: str, raw: str, allow_none: bool) -> float | None:
    if allow_none and raw.strip().lower() == "none":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        extra = ", or none for no limit" if allow_none else ""
        raise ConfigError(f"{name} must be a positive number{extra}, not {raw!r}.")
    return value


def _prices(name: str, raw: str) -> tuple[tuple[str, float, float], ...]:
    """``{"model": [input, output]}``: US dollars per million tokens."""
    try:
        data = json.loads(raw)
        return tuple((str(model), float(pair[0]), float(pair[1])) for model, pair in data.items())
    except (ValueError, TypeError, AttributeError, IndexError, KeyError):
        raise ConfigError(
            f'{name} must be JSON like {{"my-model": [0.15, 0.60]}} (USD per million input, output tokens).'
        ) from None


def load_settings(
    environ: Mapping[str, str] | None = None, env_file: Path | None = Path(".env")
) -> Settings:
    """Settings from ``.env`` (if present) overlaid by the real environment."""
    values: dict[str, str] = {}
    if env_file is not None and env_file.is_file():
        values.update({k: v for k, v in dotenv_values(env_file).items() if v is not None})
    values.update(os.environ if environ is None else environ)
    present = {name: raw for name, raw in values.items() if name in _VARIABLES and raw.strip()}
    if "NOD_WORK_SLOTS" in present:  # the new name wins over the old one
        present.pop("NOD_MAX_CONCURRENT_TURNS", None)
    for enabling, needed in _REQUIRED_WHEN:
        if enabling in present and needed not in present:
            raise ConfigError(f"{enabling} is set, so {needed} must be set too.")
    uses_openai = ("NOD_AGENT_MODEL" in present or "NOD_MEMORY_MODEL" in present)
    if uses_openai and "OPENAI_BASE_URL" not in present and "OPENAI_API_KEY" not in present:
        raise ConfigError("A model is configured for OpenAI's own API, so OPENAI_API_KEY must be set.")
    if "NOD_TRANSCRIBE_MODEL" in present and not any(
            name in present for name in ("NOD_TRANSCRIBE_BASE_URL", "NOD_TRANSCRIBE_API_KEY", "OPENAI_BASE_URL",
                                         "OPENAI_API_KEY")):
        raise ConfigError("NOD_TRANSCRIBE_MODEL is set for OpenAI's own API, so OPENAI_API_KEY "
                          "(or NOD_TRANSCRIBE_API_KEY) must be set.")
    return Settings(**{_VARIABLES[n]: _parse(n, raw) for n, raw in present.items()})
