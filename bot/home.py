"""Where Nod keeps its data: one directory, ``NOD_HOME``, holding the database, its search index and ``.env``.

Every command finds the same data wherever it runs: ``NOD_HOME`` when set, else the
platform's place for application data; ``NOD_DATABASE_URL`` still overrides the database.
Only ``nod run`` and ``nod init`` create a database (``MissingDatabase`` otherwise), so a
mistyped path never starts an empty second Nod. The places per platform: the README's
*Configuration*.
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
