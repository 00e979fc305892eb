"""``nod doctor`` against a working and a broken configuration: the fake servers on loopback,
each broken part named on its own line (issue 43: 11)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from adapters.storage import legacy
from adapters.storage.database import create_engine, writing
from adapters.storage.migrations import head, migrate, revisions
from bot.doctor import doctor
from bot.settings import load_settings
from tests.fakes import telegram_server as tg
from tests.fakes import twilio_server as tw
from tests.fakes.loopback import NOD_PREFIXES, free_port
from tests.fakes.model_server import FakeModelServer


@pytest.fixture
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(NOD_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NOD_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


async def _checked() -> tuple[int, dict[str, str]]:
    out = io.StringIO()
    code = await doctor(out, load_settings())
    lines = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in out.getvalue().splitlines()}
    return code, lines


def _servers(model: FakeModelServer, telegram: tg.FakeTelegramServer, twilio: tw.FakeTwilioServer,
             monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "NOD_AGENT_MODEL": "gpt-4o-mini", "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test",
        "TELEGRAM_BOT_TOKEN": tg.TOKEN, "TELEGRAM_API_BASE_URL": telegram.base_url,
        "TWILIO_ACCOUNT_SID": tw.ACCOUNT_SID, "TWILIO_AUTH_TOKEN": tw.AUTH_TOKEN, "TWILIO_WHATSAPP_FROM": tw.FROM,
        "TWILIO_API_BASE_URL": twilio.base_url, "NOD_PUBLIC_URL": "https://nod.example.org",
    }.items():
        monkeypatch.setenv(name, value)


async def test_a_working_installation_is_ok_on_every_line(environment: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    environment.mkdir()
    engine = create_engine(f"sqlite+aiosqlite:///{environment / 'nod.db'}")
    await migrate(engine)
    await engine.dispose()
    model, telegram, twilio = (FakeModelServer(api_key="sk-test"), tg.FakeTelegramServer(), tw.FakeTwilioServer())
    await model.start(), await telegram.start(), await twilio.start()
    try:
        _servers(model, telegram, twilio, monkeypatch)
        code, lines = await _checked()
    finally:
        await model.stop(), await telegram.stop(), await twilio.stop()
    assert code == 0, lines
    assert list(lines) == ["settings", "database", "migrations", "search index", "agent model server", "Telegram API",
                           "Twilio API"]
    assert all(line.startswith("ok") for line in lines.values()), lines
    assert lines["migrations"] == f"ok: at revision {head()}, the newest" and tg.TOKEN not in str(lines) and "sk-test" not in str(lines)


async def test_a_broken_installation_names_each_broken_part(environment: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, telegram, twilio = (FakeModelServer(api_key="sk-right"), tg.FakeTelegramServer(), tw.FakeTwilioServer())
    await model.start(), await telegram.start(), await twilio.start()
    try:
        _servers(model, telegram, twilio, monkeypatch)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")  # the model server refuses the key
        monkeypatch.setenv("NOD_MEMORY_MODEL", "small")
        monkeypatch.setenv("NOD_MEMORY_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there
        monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:not-the-token")
        monkeypatch.setenv("TWILIO_AUTH_TOKEN", "not-the-auth-token")
        code, lines = await _checked()
    finally:
        await model.stop(), await telegram.stop(), await twilio.stop()
    assert code == 1
    home = environment
    assert lines["database"] == f"FAIL: there is no database at {home / 'nod.db'} (`nod init` creates it)"
    assert lines["agent model server"] == f"FAIL: {model.base_url} refused the credentials (HTTP 401)"
    assert lines["memory model server"].startswith("FAIL: cannot reach http://127.0.0.1:")
    assert lines["memory model server"].endswith("/v1 (connection refused)")  # words, not ('127.0.0.1', port)
    assert lines["Telegram API"] == f"FAIL: {telegram.base_url} refused the credentials (HTTP 401)"
    assert lines["Twilio API"] == f"FAIL: {twilio.base_url} refused the credentials (HTTP 401)"
    assert not home.exists()  # doctor never creates the database it reports missing
    assert "not-the-auth-token" not in str(lines) and "not-the-token" not in str(lines)


async def test_a_database_behind_on_migrations_and_an_unreadable_index_fail(environment: Path) -> None:
    """A database still on the numbered migrations from before Alembic (here at 11 of 12) is behind."""
    environment.mkdir()
    engine = create_engine(f"sqlite+aiosqlite:///{environment / 'nod.db'}")
    async with writing(engine) as conn:
        await conn.run_sync(legacy.apply_steps, 11)
    await engine.dispose()
    (environment / "nod.db.search").mkdir()
    (environment / "nod.db.search" / "meta.json").write_text("{not json")
    code, lines = await _checked()
    assert code == 1
    assert lines["migrations"] == ("FAIL: still on the numbered migrations from before Alembic (version 11); "
                                   "`nod db upgrade` takes it over; so does `nod run`")
    assert lines["search index"].startswith(f"FAIL: {environment / 'nod.db.search'} cannot be read")


async def test_a_database_behind_on_revisions_and_one_ahead_of_this_nod_fail(environment: Path) -> None:
    environment.mkdir()
    engine = create_engine(f"sqlite+aiosqlite:///{environment / 'nod.db'}")
    await migrate(engine)
    async with writing(engine) as conn:
        from sqlalchemy import text

        await conn.execute(text("DELETE FROM alembic_version"))
    code, lines = await _checked()
    assert code == 1
    chain = [r.revision for r in revisions()]
    assert lines["migrations"] == (f"FAIL: at revision none, {len(chain)} not applied ({', '.join(chain)}; `nod db upgrade` "
                                   "applies them; so does `nod run`)")
    async with writing(engine) as conn:
        await conn.execute(text("INSERT INTO alembic_version (version_num) VALUES ('0099_from_the_future')"))
    await engine.dispose()
    code, lines = await _checked()
    assert code == 1 and lines["migrations"].startswith(
        "FAIL: The database's schema is at revision 0099_from_the_future, which this version of Nod does not know")


async def test_a_broken_setting_is_the_settings_line(environment: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOD_PORT", "eighty")
    out = io.StringIO()
    assert await doctor(out) == 1
    assert out.getvalue().startswith("settings:") and "FAIL: NOD_PORT" in out.getvalue()
