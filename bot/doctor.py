"""``nod doctor``: each part of a Nod installation checked, one line each, ``ok`` or ``FAIL: reason``.

The settings, the database (reached, never created: a missing file is a failure, not a new
empty database), its migrations, the search index, and each configured server, asked the
cheapest question that needs the credentials (the model server's ``GET /models``,
Telegram's ``getMe``, Twilio's account resource) with a short deadline. A part that is not
configured says so and does not fail. Exit status 1 when any line failed. No secret is
ever printed: servers are named by their base URL, never by token or key.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import aiohttp
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from adapters.storage.database import create_engine, describe, sqlite_file, storage_error
from adapters.storage.migrations import SchemaState, head, schema_state
from bot.home import DATABASE_FILE, ENV_FILE
from bot.settings import Settings, load_settings
from core.errors import ConfigError

TIMEOUT_S = 5.0
OPENAI_BASE = "https://api.openai.com/v1"
TELEGRAM_BASE = "https://api.telegram.org"
TWILIO_BASE = "https://api.twilio.com"


@dataclass(frozen=True)
class Line:
    part: str
    ok: bool
    detail: str

    def __str__(self) -> str:
        return f"{self.part + ':':<22} {'ok' if self.ok else 'FAIL'}{': ' if self.detail else ''}{self.detail}"


async def _database(settings: Settings) -> tuple[list[Line], bool]:
    """The database line and the migrations line; and whether the database was reached."""
    named = describe(settings.database_url)
    path = sqlite_file(settings.database_url)
    if path is not None and not path.exists():
        return [Line("database", False, f"there is no database at {path.absolute()} (`nod init` creates it)")], False
    try:
        engine = create_engine(settings.database_url)
    except ConfigError as exc:
        return [Line("database", False, str(exc))], False
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        state = await schema_state(engine)
    except (SQLAlchemyError, OSError) as exc:
        return [Line("database", False, str(storage_error(exc, settings.database_url)))], False
    finally:
        await engine.dispose()
    return [Line("database", True, named), _migrations(state)], True


def _migrations(state: SchemaState) -> Line:
    """The schema's revision: the newest, behind, still on the numbered migrations, or unknown here."""
    if state.problem:
        return Line("migrations", False, state.problem)
    upgrade = "`nod db upgrade` applies them; so does `nod run`"
    if state.legacy_version is not None:
        return Line("migrations", False, f"still on the numbered migrations from before Alembic (version "
                                         f"{state.legacy_version}); `nod db upgrade` takes it over; so does `nod run`")
    if state.pending:
        return Line("migrations", False, f"at revision {state.current or 'none'}, {len(state.pending)} not applied "
                                         f"({', '.join(state.pending)}; {upgrade})")
    return Line("migrations", True, f"at revision {head()}, the newest")


def _search_index(settings: Settings) -> Line:
    path = sqlite_file(settings.database_url)
    directory = path.with_name(path.name + ".search") if path is not None else (
        Path(settings.search_index_dir) if settings.search_index_dir else None)
    if directory is None:
        return Line("search index", True, "PostgreSQL's own full text (NOD_SEARCH_INDEX_DIR is not set)")
    if not directory.exists():
        return Line("search index", True, f"{directory.absolute()} is not built yet (the first search builds it)")
    import tantivy

    try:
        found = tantivy.Index.open(str(directory))
        found.reload()
        count = found.searcher().num_docs
    except (ValueError, OSError) as exc:
        return Line("search index", False, f"{directory.absolute()} cannot be read ({exc}); delete it and Nod rebuilds it")
    return Line("search index", True, f"{directory.absolute()}, {count:,} messages")


async def _get(http: aiohttp.ClientSession, url: str, shown: str, headers: dict[str, str] | None = None,
               auth: aiohttp.BasicAuth | None = None) -> tuple[int, str]:
    """The status of an authenticated GET, or 0 and why it got none."""
    try:
        async with http.get(url, headers=headers, auth=auth, timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as response:
            return response.status, ""
    except TimeoutError:
        return 0, f"{shown} did not answer within {TIMEOUT_S:.0f} s"
    except aiohttp.ClientError as exc:  # the OS's reason in words ("Connection refused"), never a tuple
        error = getattr(exc, "os_error", None)
        number = getattr(error, "errno", None)
        reason = os.strerror(number) if number else "no connection"
        return 0, f"cannot reach {shown} ({reason[0].lower() + reason[1:]})"


def _verdict(part: str, status: int, failure: str, shown: str) -> Line:
    if status == 0:
        return Line(part, False, failure)
    if status in (401, 403):
        return Line(part, False, f"{shown} refused the credentials (HTTP {status})")
    if status >= 400:
        return Line(part, False, f"{shown} answered HTTP {status}")
    return Line(part, True, shown)


async def _servers(settings: Settings, http: aiohttp.ClientSession) -> list[Line]:
    checks: list[tuple[str, Callable[[], Awaitable[tuple[int, str]]], str]] = []
    models: dict[str, tuple[str, str | None]] = {}
    if settings.agent_model:
        models["agent model server"] = (settings.openai_base_url or OPENAI_BASE, settings.openai_api_key)
    if settings.memory_model:
        models["memory model server"] = (settings.memory_base_url or settings.openai_base_url or OPENAI_BASE,
                                         settings.memory_api_key or settings.openai_api_key)
    if settings.transcribe_model:
        models["transcription server"] = (settings.transcribe_base_url or settings.openai_base_url or OPENAI_BASE,
                                          settings.transcribe_api_key or settings.openai_api_key)
    for part, (base, key) in models.items():
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        url = base.rstrip("/") + "/models"
        checks.append((part, lambda url=url, headers=headers, base=base: _get(http, url, base, headers), base))
    if settings.telegram_bot_token:
        base = (settings.telegram_api_base_url or TELEGRAM_BASE).rstrip("/")
        url = f"{base}/bot{settings.telegram_bot_token}/getMe"
        checks.append(("Telegram API", lambda url=url, base=base: _get(http, url, base), base))
    if settings.twilio_account_sid:
        base = (settings.twilio_api_base_url or TWILIO_BASE).rstrip("/")
        url = f"{base}/2010-04-01/Accounts/{settings.twilio_account_sid}.json"
        auth = aiohttp.BasicAuth(settings.twilio_account_sid, settings.twilio_auth_token or "")
        checks.append(("Twilio API", lambda url=url, base=base, auth=auth: _get(http, url, base, auth=auth), base))
    answers = await asyncio.gather(*(check() for _, check, _ in checks))
    lines = [_verdict(part, status, failure, shown) for (part, _, shown), (status, failure) in zip(checks, answers, strict=True)]
    if not models:
        lines.append(Line("model server", True, "none configured (NOD_AGENT_MODEL is not set): Nod cannot answer yet"))
    return lines


def _settings_line(settings: Settings) -> Line:
    home = Path(settings.home or ".")
    env = home / ENV_FILE
    said = f"NOD_HOME {home}, {'settings from ' + str(env) if env.is_file() else 'no ' + str(env)}"
    here = Path(ENV_FILE)
    if here.is_file() and here.absolute() != env.absolute():
        said += f"; {here.absolute()} is not read"
    old = Path(DATABASE_FILE)
    if old.is_file() and sqlite_file(settings.database_url) not in (old, old.absolute()):
        said += f"; {old.absolute()} is not the database in use"
    return Line("settings", True, said)


async def doctor(out: TextIO, settings: Settings | None = None) -> int:
    """Print one line per part to ``out``; 0 when none failed, else 1."""
    try:
        settings = settings or load_settings()
    except ConfigError as exc:
        out.write(f"{Line('settings', False, str(exc))}\n")
        return 1
    lines = [_settings_line(settings)]
    database, reached = await _database(settings)
    lines += database
    if reached:
        lines.append(_search_index(settings))
    async with aiohttp.ClientSession() as http:
        lines += await _servers(settings, http)
    out.write("".join(f"{line}\n" for line in lines))
    return 0 if all(line.ok for line in lines) else 1
