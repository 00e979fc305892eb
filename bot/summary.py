"""What ``nod run`` says once at start: each part on or off, and the setting that turns it on.

An operator who starts Nod with half a configuration should not have to read the code to
learn why WhatsApp stays silent: every part is listed, and an "off" names the variable
to set. Secrets never appear (the database password is masked, tokens are not shown). Each
channel's line is its package's to word (bot.channels).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from sqlalchemy.engine import make_url

from bot.channels import ChannelKind
from bot.settings import Settings, joined

WIDTH = 14


def _line(part: str, state: str) -> str:
    return f"  {part:<{WIDTH}}{state}"


def _server(base_url: str | None) -> str:
    return urlsplit(base_url).netloc if base_url else "api.openai.com"


def _channel(kind: ChannelKind, s: Settings) -> str:
    needed = s.missing(kind.name)
    if needed:
        return f"off: set {joined(needed)}" + (f" ({kind.off_hint})" if kind.off_hint else "")
    return kind.summary(s)


def _no_channel(s: Settings) -> list[str]:
    """The line that says how to talk to Nod when no channel is on; none when one is."""
    if any(s.on(name) for name in s.channels):
        return []
    ways = [kind.turn_on for kind in s.channels.values()]
    turn_on = f", or set {joined(ways, 'or')}" if ways else ""
    return [f"No channel is on: talk to Nod here with `nod chat --owner NAME`{turn_on}."]


def _page(s: Settings) -> str:
    needed = s.missing("page")
    if needed:
        return "off: set " + joined(needed)
    return f"on, {str(s.public_url).rstrip('/')}/settings/memory (links from /settings)"


def _gmail(s: Settings) -> str:
    if not s.on("gmail"):
        return f"off: set {joined(s.missing('gmail'))} (the writing style from sent mail)"
    return "on, owners connect it from the memory page or nod gmail connect"


def _models(s: Settings) -> list[str]:
    agent = (f"on, {s.agent_model} at {_server(s.openai_base_url)}" if s.agent_model
             else "off: set NOD_AGENT_MODEL (each message gets a sentence saying so)")
    memory = (f"on, {s.memory_model} at {_server(s.memory_base_url or s.openai_base_url)}" if s.memory_model
              else "off: set NOD_MEMORY_MODEL (nothing is saved, no evidence is selected)")
    transcribe = (f"on, {s.transcribe_model} at {_server(s.transcribe_base_url or s.openai_base_url)}" if s.transcribe_model
                  else "off: set NOD_TRANSCRIBE_MODEL (voice notes get a sentence saying so)")
    images = {"on": "on: shown to the agent model", "off": "off: NOD_AGENT_VISION=off (a photo gets a sentence saying so)",
              "auto": "auto: shown until the agent model's server refuses one (NOD_AGENT_VISION)"}[s.agent_vision]
    if not s.agent_model:
        images = "off: set NOD_AGENT_MODEL (with a vision model)"
    return [_line("agent model", agent), _line("memory model", memory), _line("voice notes", transcribe),
            _line("photos", images)]


def _database(s: Settings) -> str:
    url = make_url(s.database_url)
    if url.get_backend_name() == "sqlite":
        return f"SQLite {Path(url.database or '').resolve()}"
    return url.render_as_string(hide_password=True)


def start_summary(settings: Settings, search_index: Path | None) -> str:
    """The lines ``nod run`` prints once, before it listens."""
    return "\n".join([
        "Nod is starting:",
        *(_line(kind.label, _channel(kind, settings)) for kind in settings.channels.values()),
        _line("memory page", _page(settings)),
        _line("Gmail", _gmail(settings)),
        *_models(settings),
        _line("maintenance", "on, hourly at minute 7 UTC" + ("" if settings.memory_model
                                                            else " (repairs only: reflection needs NOD_MEMORY_MODEL)")),
        _line("database", _database(settings)),
        _line("search index", str(search_index.resolve()) if search_index
              else "PostgreSQL's own full text (set NOD_SEARCH_INDEX_DIR for the derived index)"),
        *_no_channel(settings),
    ])
