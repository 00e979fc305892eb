"""Settings: one typed class read once from the environment and an optional ``.env`` file.

Nothing else in Nod reads ``os.environ``, and a part that is on but misses its secret fails at
start naming the variable, not mid-conversation. Details: docs/architecture.md, "Settings".
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, ClassVar

from pydantic import AliasChoices, Field, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from adapters.storage.database import DEFAULT_URL
from bot.channels import CHANNELS, ChannelKind, Registry
from bot.home import ENV_FILE, database_url_in, resolve_home
from core.errors import ConfigError

Prices = tuple[tuple[str, float, float], ...]
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
MIN_SECRET_KEY_CHARS = 16


def _var(name: str, *older: str) -> Any:
    return AliasChoices(name, *older) if older else name


class Settings(BaseSettings, *(kind.settings for kind in CHANNELS.values())):  # type: ignore[misc]  # bases from the registry
    """Nod's own settings and, composed in, each channel's in the registry."""

    model_config = SettingsConfigDict(frozen=True, populate_by_name=True, extra="ignore", env_ignore_empty=True,
                                      case_sensitive=True, env_file_encoding="utf-8")

    database_url: str = Field(DEFAULT_URL, validation_alias=_var("NOD_DATABASE_URL"))
    # the data directory (bot.home); load_settings fills it in, and the database URL from it when unset
    home: str | None = Field(None, validation_alias=_var("NOD_HOME"))
    host: str = Field("127.0.0.1", validation_alias=_var("NOD_HOST"))
    port: int = Field(8080, validation_alias=_var("NOD_PORT"))
    public_url: str | None = Field(None, validation_alias=_var("NOD_PUBLIC_URL"))
    secret_key: str | None = Field(None, validation_alias=_var("NOD_SECRET_KEY"))
    openai_api_key: str | None = Field(None, validation_alias=_var("OPENAI_API_KEY"))
    openai_base_url: str | None = Field(None, validation_alias=_var("OPENAI_BASE_URL"))
    agent_model: str | None = Field(None, validation_alias=_var("NOD_AGENT_MODEL"))
    memory_model: str | None = Field(None, validation_alias=_var("NOD_MEMORY_MODEL"))
    memory_base_url: str | None = Field(None, validation_alias=_var("NOD_MEMORY_BASE_URL"))
    memory_api_key: str | None = Field(None, validation_alias=_var("NOD_MEMORY_API_KEY"))
    # voice notes: an OpenAI-compatible /v1/audio/transcriptions model, its own server and key if set
    transcribe_model: str | None = Field(None, validation_alias=_var("NOD_TRANSCRIBE_MODEL"))
    transcribe_base_url: str | None = Field(None, validation_alias=_var("NOD_TRANSCRIBE_BASE_URL"))
    transcribe_api_key: str | None = Field(None, validation_alias=_var("NOD_TRANSCRIBE_API_KEY"))
    google_client_id: str | None = Field(None, validation_alias=_var("GOOGLE_CLIENT_ID"))
    google_client_secret: str | None = Field(None, validation_alias=_var("GOOGLE_CLIENT_SECRET"))
    # test servers for Google's OAuth endpoints and the Gmail API
    google_oauth_base_url: str | None = Field(None, validation_alias=_var("GOOGLE_OAUTH_BASE_URL"))
    gmail_api_base_url: str | None = Field(None, validation_alias=_var("GMAIL_API_BASE_URL"))
    json_mode: str = Field("json_schema", validation_alias=_var("NOD_JSON_MODE"))
    # strict: true with json_schema (OpenAI enforces it; Ollama and llama.cpp ignore it)
    json_strict: bool = Field(True, validation_alias=_var("NOD_JSON_STRICT"))
    agent_context_tokens: int | None = Field(None, validation_alias=_var("NOD_AGENT_CONTEXT_TOKENS"))
    # photos shown to the agent model: on, off, or auto (shown until its server refuses one)
    agent_vision: str = Field("auto", validation_alias=_var("NOD_AGENT_VISION"))
    memory_deadline_s: float = Field(20.0, validation_alias=_var("NOD_MEMORY_DEADLINE_SECONDS"))
    # each agent step's deadline: a CPU-only local model may need more than two minutes
    agent_deadline_s: float = Field(120.0, validation_alias=_var("NOD_AGENT_DEADLINE_SECONDS"))
    # every call's max_tokens times this: below 1 for a slow model that runs away, above 1 for a thinking model
    max_tokens_scale: float = Field(1.0, validation_alias=_var("NOD_MAX_TOKENS_SCALE"))
    spending_limit_usd: float | None = Field(10.0, validation_alias=_var("NOD_SPENDING_LIMIT_USD"))
    model_prices: Annotated[Prices, NoDecode] = Field((), validation_alias=_var("NOD_MODEL_PRICES"))
    open_signup: bool = Field(False, validation_alias=_var("NOD_OPEN_SIGNUP"))
    # turns doing server work at once; waiting for a model is not counted
    work_slots: int = Field(2, validation_alias=_var("NOD_WORK_SLOTS", "NOD_MAX_CONCURRENT_TURNS"))
    # unset: INFO for `nod run`, WARNING for one-shot commands
    log_level: str | None = Field(None, validation_alias=_var("NOD_LOG_LEVEL"))
    log_text: bool = Field(False, validation_alias=_var("NOD_LOG_TEXT"))
    # PostgreSQL: where this host keeps the derived search index (SQLite keeps it beside nod.db)
    search_index_dir: str | None = Field(None, validation_alias=_var("NOD_SEARCH_INDEX_DIR"))
    channels: ClassVar[Registry] = CHANNELS  # the channels whose settings these are
    reads_environment: ClassVar[bool] = False

    @classmethod
    def parts(cls) -> dict[str, Part]:
        """The one place that says when each part is on: each channel's rules, then Nod's own (PARTS)."""
        return {**{name: Part(needs) for kind in cls.channels.values() for name, needs in kind.parts.items()}, **PARTS}

    @classmethod
    def variable(cls, field: str) -> str:
        """The environment variable that sets ``field``."""
        return _names(cls, field)[0]

    @classmethod
    def with_channels(cls, *kinds: ChannelKind) -> type[Settings]:
        """These settings with more channels, or another build of one: a channel outside the
        registry (a test's) is plugged in through the same entries as the registry's own."""
        more = tuple(kind.settings for kind in kinds if not issubclass(cls, kind.settings))
        channels = MappingProxyType({**cls.channels, **{kind.name: kind for kind in kinds}})
        return type(cls.__name__, (cls, *more), {"channels": channels, "__module__": cls.__module__})

    def missing(self, part: str) -> tuple[str, ...]:
        """The variables ``part`` (a key of ``parts()``) still needs, by their names; empty when it is on."""
        return tuple(self.variable(field) for field in self.parts()[part].needs if not getattr(self, field))

    def on(self, part: str) -> bool:
        return not self.missing(part)

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Values given in code are the whole story; ``load_settings`` reads the outside."""
        return (init_settings, env_settings, dotenv_settings) if cls.reads_environment else (init_settings,)

    @field_validator("*", mode="before")
    @classmethod
    def _stripped(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator("port")
    @classmethod
    def _port(cls, value: int, info: ValidationInfo) -> int:
        if not 0 < value < 65536:
            raise ValueError(f"{_name(info)} must be a port number, not {value!r}.")
        return value

    @field_validator("json_mode")
    @classmethod
    def _json_mode(cls, value: str, info: ValidationInfo) -> str:
        if value not in ("json_schema", "json_object"):
            raise ValueError(f"{_name(info)} must be json_schema or json_object, not {value!r}.")
        return value

    @field_validator("agent_vision")
    @classmethod
    def _vision(cls, value: str, info: ValidationInfo) -> str:
        if value.lower() not in ("on", "off", "auto"):
            raise ValueError(f"{_name(info)} must be on, off or auto, not {value!r}.")
        return value.lower()

    @field_validator("agent_context_tokens", "work_slots")
    @classmethod
    def _whole(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and value <= 0:
            raise ValueError(f"{_name(info)} must be a positive whole number, not {value!r}.")
        return value

    @field_validator("spending_limit_usd", mode="before")
    @classmethod
    def _no_limit(cls, value: Any) -> Any:
        return None if isinstance(value, str) and value.lower() == "none" else value

    @field_validator("memory_deadline_s", "agent_deadline_s", "max_tokens_scale", "spending_limit_usd")
    @classmethod
    def _positive(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is not None and not value > 0:
            extra = ", or none for no limit" if info.field_name == "spending_limit_usd" else ""
            raise ValueError(f"{_name(info)} must be a positive number{extra}, not {value!r}.")
        return value

    @field_validator("memory_deadline_s", "agent_deadline_s", "max_tokens_scale")
    @classmethod
    def _finite(cls, value: float, info: ValidationInfo) -> float:
        if not math.isfinite(value):
            unit = " of seconds" if info.field_name.endswith("_s") else ""
            raise ValueError(f"{_name(info)} must be a finite number{unit}, not {value!r}.")
        return value

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and value.upper() not in LOG_LEVELS:
            raise ValueError(f"{_name(info)} must be one of {', '.join(LOG_LEVELS)}, not {value!r}.")
        return value

    @field_validator("public_url")
    @classmethod
    def _url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not re.match(r"https?://[^/\s]+", value):
            raise ValueError(f"{_name(info)} must be an http(s) URL such as https://nod.example.com, not {value!r}.")
        return value

    @field_validator("model_prices", mode="before")
    @classmethod
    def _prices(cls, value: Any, info: ValidationInfo) -> Any:
        """``{"model": [input, output]}``: US dollars per million tokens."""
        if not isinstance(value, str):
            return value
        try:
            data = json.loads(value)
            prices = tuple((str(model), float(pair[0]), float(pair[1])) for model, pair in data.items())
            if not all(math.isfinite(p) and p >= 0 for _, *pair in prices for p in pair):
                raise ValueError("not a price")
            return prices
        except (ValueError, TypeError, AttributeError, IndexError, KeyError):
            raise ValueError(f'{_name(info)} must be JSON like {{"my-model": [0.15, 0.60]}} '
                             "(USD per million input, output tokens).") from None


@cache
def _from_environment(settings: type[Settings]) -> type[Settings]:
    """``settings`` as ``nod`` reads them: the environment, then ``.env``."""
    return type("FromEnvironment", (settings,), {"reads_environment": True, "__module__": __name__})


def _names(settings: type[Settings], field: str) -> tuple[str, ...]:
    alias = settings.model_fields[field].validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(choice) for choice in alias.choices)
    return (str(alias),)


def _name(info: ValidationInfo) -> str:
    return _names(Settings, str(info.field_name))[0]


_OLDER_NAMES = frozenset({"NOD_MAX_CONCURRENT_TURNS"})  # read for compatibility, no longer documented


def variable_names(settings: type[Settings] = Settings) -> tuple[str, ...]:
    return tuple(name for field in settings.model_fields for name in _names(settings, field) if name not in _OLDER_NAMES)


@dataclass(frozen=True)
class Part:
    """A part of Nod that is on when all its settings are set. With ``switch``, setting the first
    alone is a mistake reported at start (the operator meant to turn it on); without, the part is
    simply off until both are set (the page's two settings also serve Gmail)."""

    needs: tuple[str, ...]
    switch: bool = True


# When Nod's own parts are on (each channel's rules are in its package): nod run's channels, its
# start summary, the page and Gmail wiring, and the start-up check all read Settings.parts().
PARTS: dict[str, Part] = {
    "page": Part(("public_url", "secret_key"), switch=False),
    # the secret key seals the refresh token and signs the page the button is on; Google redirects the
    # browser to NOD_PUBLIC_URL/oauth/google/callback
    "gmail": Part(("google_client_id", "google_client_secret", "secret_key", "public_url")),
}


def _sentence(error: ValidationError, settings: type[Settings]) -> str:
    first = error.errors()[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    field = str(first["loc"][0]) if first["loc"] else ""
    name = next((n for f in settings.model_fields for n in _names(settings, f) if field in (f, n)), field)
    if name in message:
        return message
    return f"{name} is not valid: {message[0].lower() + message[1:]} (not {first.get('input')!r})."


def check(settings: Settings) -> Settings:
    """The rules across variables: an enabled part needs its secrets, all of them named at once."""
    missing: dict[str, list[str]] = {}
    for name, part in settings.parts().items():
        if part.switch and getattr(settings, part.needs[0]) and settings.missing(name):
            needed = missing.setdefault(settings.variable(part.needs[0]), [])
            needed += [n for n in settings.missing(name) if n not in needed]
    if missing:  # one sentence for every part, so a restart never uncovers the next one
        raise ConfigError("; ".join(f"{enabling} is set, so {joined(needed)} must be set too"
                                    for enabling, needed in missing.items()) + ".")
    if settings.secret_key is not None and len(settings.secret_key) < MIN_SECRET_KEY_CHARS:
        raise ConfigError(f"NOD_SECRET_KEY must be at least {MIN_SECRET_KEY_CHARS} characters: it signs the page's "
                          "sessions and seals the Gmail token (python3 -c 'import secrets; print(secrets.token_urlsafe(32))').")
    uses_openai = settings.agent_model or settings.memory_model
    if uses_openai and not settings.openai_base_url and not settings.openai_api_key:
        raise ConfigError("A model is configured for OpenAI's own API, so OPENAI_API_KEY must be set.")
    if settings.transcribe_model and not (settings.transcribe_base_url or settings.transcribe_api_key
                                          or settings.openai_base_url or settings.openai_api_key):
        raise ConfigError("NOD_TRANSCRIBE_MODEL is set for OpenAI's own API, so OPENAI_API_KEY "
                          "(or NOD_TRANSCRIBE_API_KEY) must be set.")
    return settings


def joined(names: Sequence[str], last: str = "and") -> str:
    """"A", "A and B", "A, B and C" (or with ``last`` "or": "A, B or C")."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


IN_HOME = Path("$NOD_HOME", ENV_FILE)  # load_settings' default: the .env in the data directory


def load_settings(env_file: Path | None = IN_HOME, environ: Mapping[str, str] | None = None,
                  settings: type[Settings] = Settings) -> Settings:
    """Settings from the environment over ``.env`` (if present), checked; ConfigError naming the variable.

    ``env_file`` is ``NOD_HOME/.env`` unless given (None: no file). The result names its
    data directory (``home``) and, unless ``NOD_DATABASE_URL`` is set, ``NOD_HOME/nod.db``.
    ``settings``: another set of channels (``Settings.with_channels``).
    """
    home = resolve_home(os.environ if environ is None else environ)
    if env_file is IN_HOME:
        env_file = home / ENV_FILE
    try:
        loaded = _from_environment(settings)(_env_file=env_file if env_file is not None and env_file.is_file() else None)
    except ValidationError as exc:
        raise ConfigError(_sentence(exc, settings)) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{env_file} is not UTF-8 text; save it as UTF-8 or remove it.") from None
    update: dict[str, Any] = {"home": str(home)}
    if "database_url" not in loaded.model_fields_set:
        update["database_url"] = database_url_in(home)
    return check(loaded.model_copy(update=update))
