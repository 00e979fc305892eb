"""What `nod run` says at start: every part on or off, and the setting that turns it on."""

from __future__ import annotations

import logging
from pathlib import Path

from bot.logs import configure_logging
from bot.settings import Settings
from bot.summary import start_summary


def test_with_nothing_configured_every_part_says_what_turns_it_on(tmp_path: Path) -> None:
    db = tmp_path / "nod.db"
    summary = start_summary(Settings(database_url=f"sqlite+aiosqlite:///{db}"), tmp_path / "nod.db.search")
    assert summary.splitlines() == [
        "Nod is starting:",
        "  Telegram      off: set TELEGRAM_BOT_TOKEN (from @BotFather)",
        "  WhatsApp      off: set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, TWILIO_WHATSAPP_FROM and NOD_PUBLIC_URL",
        "  memory page   off: set NOD_PUBLIC_URL and NOD_SECRET_KEY",
        "  Gmail         off: set GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, NOD_SECRET_KEY and NOD_PUBLIC_URL (the writing style "
        "from sent mail)",
        "  agent model   off: set NOD_AGENT_MODEL (each message gets a sentence saying so)",
        "  memory model  off: set NOD_MEMORY_MODEL (nothing is saved, no evidence is selected)",
        "  voice notes   off: set NOD_TRANSCRIBE_MODEL (voice notes get a sentence saying so)",
        "  photos        off: set NOD_AGENT_MODEL (with a vision model)",
        "  maintenance   on, hourly at minute 7 UTC (repairs only: reflection needs NOD_MEMORY_MODEL)",
        f"  database      SQLite {db}",
        f"  search index  {tmp_path / 'nod.db.search'}",
        "No channel is on: talk to Nod here with `nod chat --owner NAME`, or set TELEGRAM_BOT_TOKEN or the TWILIO_* settings.",
    ]


def test_with_everything_configured_each_part_is_on_and_no_secret_is_shown() -> None:
    settings = Settings(
        database_url="postgresql+asyncpg://nod:hunter2@db.internal:5432/nod",
        public_url="https://nod.example.com", secret_key="s" * 32,
        openai_api_key="sk-live-123", openai_base_url="http://127.0.0.1:11434/v1",
        agent_model="qwen3:8b", memory_model="qwen3:4b", transcribe_model="whisper-1",
        telegram_bot_token="123:ABC", telegram_webhook_url="https://nod.example.com/webhooks/telegram",
        telegram_webhook_secret="w", twilio_account_sid="AC1", twilio_auth_token="tok",
        twilio_whatsapp_from="+15550001111", google_client_id="gid", google_client_secret="gsecret",
    )
    summary = start_summary(settings, None)
    assert summary.splitlines()[1:] == [
        "  Telegram      on, webhook https://nod.example.com/webhooks/telegram",
        "  WhatsApp      on, Twilio from +15550001111, webhook https://nod.example.com/webhooks/whatsapp",
        "  memory page   on, https://nod.example.com/settings/memory (links from /settings)",
        "  Gmail         on, owners connect it from the memory page or nod gmail connect",
        "  agent model   on, qwen3:8b at 127.0.0.1:11434",
        "  memory model  on, qwen3:4b at 127.0.0.1:11434",
        "  voice notes   on, whisper-1 at 127.0.0.1:11434",
        "  photos        auto: shown until the agent model's server refuses one (NOD_AGENT_VISION)",
        "  maintenance   on, hourly at minute 7 UTC",
        "  database      postgresql+asyncpg://nod:***@db.internal:5432/nod",
        "  search index  PostgreSQL's own full text (set NOD_SEARCH_INDEX_DIR for the derived index)",
    ]
    for secret in ("hunter2", "sk-live-123", "123:ABC", "tok", "s" * 32, "gsecret"):
        assert secret not in summary


def test_the_twilio_clients_header_lines_are_kept_out_of_the_log() -> None:
    configure_logging("INFO")
    assert logging.getLogger("twilio.http_client").getEffectiveLevel() == logging.WARNING
