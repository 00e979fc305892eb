"""Where Nod keeps its data: one directory, ``NOD_HOME``, holding the database, its search
index and ``.env``.

The database used to be ``nod.db`` in the current directory, so ``nod owners list`` run in
another folder quietly made a new, empty database there. Now every command finds the same
data wherever it runs: ``NOD_HOME`` when set, else the platform's place for application data
(``$XDG_DATA_HOME/nod`` or ``~/.local/share/nod`` on Linux and other Unixes,
``~/Library/Application Support/nod`` on macOS, ``%LOCALAPPDATA%\\nod`` on Windows).
``NOD_DATABASE_URL`` still overrides the database (PostgreSQL, or a file elsewhere).

Only ``nod run`` and ``nod init`` create a database; any other command on a missing file
stops with one sentence naming it (``MissingDatabase``), so a typo in a path or a command
run from the wrong account never starts an empty second Nod.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from core.errors import NotFound

DATABASE_FILE = "nod.db"
ENV_FILE = ".env"


def default_home(environ: Mapping[str, str], platform: str = sys.platform, user_home: Path | None = None) -> Path:
    """The platform's data directory for Nod, from ``environ`` (never ``os.environ`` itself)."""
    home = user_home if user_home is not None else Path(environ.get("HOME") or Path.home())
    if platform == "darwin":
        return home / "Library" / "Application Support" / "nod"
    if platform.startswith("win"):
        local = environ.get("LOCALAPPDATA")
        return (Path(local) if local else home / "AppData" / "Local") / "nod"
    data = environ.get("XDG_DATA_HOME")
    return (Path(data) if data and Path(data).is_absolute() else home / ".local" / "share") / "nod"


def resolve_home(environ: Mapping[str, str]) -> Path:
    """``NOD_HOME`` (``~`` expanded, made absolute), else the platform default."""
    given = (environ.get("NOD_HOME") or "").strip()
    if given:
        return Path(given).expanduser().absolute()
    return default_home(environ)


def database_url_in(home: Path) -> str:
    return f"sqlite+aiosqlite:///{home / DATABASE_FILE}"


class MissingDatabase(NotFound):
    """A command other than ``nod run``/``nod init`` found no database file: nothing was created."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"There is no Nod database at {path}; create it with `nod init` (or `nod run`), "
                         "or point NOD_HOME or NOD_DATABASE_URL at the one you have.")
        self.path = path
