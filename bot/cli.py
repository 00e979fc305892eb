"""The ``nod`` command line: the edge where a command runs and its errors become sentences.

Exit status 0 on success, 1 when an action is refused or fails, 2 on bad usage. Errors
are one sentence on standard error, never a traceback; output cut short by a closed pipe
(``nod owners list | head -1``) ends quietly with 0. Only ``nod run`` and ``nod init``
create a database (bot.home); every other command on a missing one says so and stops.
The arguments are in ``bot.cli_parser``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from adapters.storage.database import DEFAULT_URL, sqlite_file, storage_error
from bot import cli_data, cli_gmail, cli_history, cli_memory, cli_operator, cli_owners, cli_schedules, cli_talk
from bot.channels import linked
from bot.cli_parser import parser as _parser
from bot.doctor import doctor
from bot.home import DATABASE_FILE, MissingDatabase, database_url_in
from bot.logs import configure_logging
from bot.settings import Settings, load_settings
from bot.wiring import Services, services
from core.errors import ConfigError, NodError
from core.owner import Identity

log = logging.getLogger("nod.cli")


def _links(args: argparse.Namespace, settings: Settings) -> tuple[Identity, ...]:
    """The identities the command names, each checked by its channel (bot.channels)."""
    return linked(settings.channels, args.link)


def _action(args: argparse.Namespace, settings: Settings) -> Callable[[Services], Awaitable[str]]:
    key = (args.command, getattr(args, "archive_action", None) or getattr(args, "action", None))
    table: dict[tuple[str, str | None], Callable[[Services], Awaitable[str]]] = {
        ("init", None): lambda s: cli_operator.init(s, settings, args.created),
        ("owners", "add"): lambda s: cli_owners.owners_add(s, args.name, _links(args, settings), args.tz),
        ("owners", "link"): lambda s: cli_owners.owners_link(s, args.name, _links(args, settings)),
        ("owners", "unlink"): lambda s: cli_owners.owners_unlink(s, args.name, _links(args, settings)),
        ("owners", "list"): lambda s: cli_owners.owners_list(s, args.json),
        ("owners", "rename"): lambda s: cli_owners.owners_rename(s, args.old, args.new),
        ("owners", "remove"): lambda s: cli_owners.owners_remove(s, args.name, args.yes, sys.stdin),
        ("owners", "set"): lambda s: cli_talk.owners_set(s, args.name, args.spending_limit, args.tz),
        ("chat", None): lambda s: cli_talk.chat(s, args.owner),
        ("usage", None): lambda s: cli_talk.usage(s, args.owner, args.json),
        ("maintenance", "run"): lambda s: cli_talk.maintenance_run(s, args.owner),
        ("history", "import"): lambda s: cli_history.history_import(
            s, args.owner, args.file, cli_history.stderr_progress(), sys.stdin
        ),
        ("memory", "show"): lambda s: cli_data.memory_show(s, args.owner, args.json),
        ("memory", "export"): lambda s: (
            cli_memory.export_json(s, args.owner) if args.json else cli_data.memory_export(s, args.owner)
        ),
        ("memory", "add"): lambda s: cli_data.memory_add(
            s, args.owner, args.path, args.text, args.abstract, args.expires
        ),
        ("memory", "forget"): lambda s: cli_data.memory_forget(s, args.owner, args.path),
        ("memory", "import"): lambda s: (
            cli_memory.import_json(s, args.owner, cli_memory.read_input(args.file, sys.stdin), args.replace)
            if args.json else cli_data.memory_import(s, args.owner, cli_memory.read_input(args.file, sys.stdin))
        ),
        ("memory", "list"): lambda s: cli_memory.archive_list(s, args.owner, args.json),
        ("memory", "restore"): lambda s: cli_memory.archive_restore(s, args.owner, args.which),
        ("page", None): lambda s: cli_data.page(s, args.owner, args.revoke),
        ("gmail", "connect"): lambda s: cli_gmail.connect(s, args.owner),
        ("gmail", "disconnect"): lambda s: cli_gmail.disconnect(s, args.owner),
        ("gmail", "refresh"): lambda s: cli_gmail.refresh(s, args.owner),
        ("skills", "list"): lambda s: cli_data.skills_list(s, args.owner, args.json),
        ("skills", "show"): lambda s: cli_data.skills_show(s, args.owner, args.name),
        ("skills", "forget"): lambda s: cli_data.skills_forget(s, args.owner, args.name),
        ("schedules", "list"): lambda s: cli_schedules.schedules_list(s, args.owner, args.json),
        ("schedules", "cancel"): lambda s: cli_schedules.schedules_cancel(s, args.owner, args.id, args.json),
        ("tool", None): lambda s: (
            cli_data.tool_batch(s, args.owner, sys.stdin, sys.stdout) if args.batch
            else cli_data.tool_run(s, args.owner, args.tool, args.args)
        ),
    }
    return table[key]


async def _run_action(settings: Settings, action: Callable[[Services], Awaitable[str]]) -> None:
    async with services(settings) as svc:
        output = await action(svc)
    if output:
        print(output)


def _database_rule(command: str, settings: Settings) -> bool:
    """Whether this command creates the SQLite database; MissingDatabase when it may not.

    PostgreSQL databases are made by their operator (createdb); migrations fill them.
    """
    path = sqlite_file(settings.database_url)
    if path is None or path.exists():
        return False
    if command not in ("run", "init"):
        raise MissingDatabase(path.absolute())
    old = Path(DATABASE_FILE)
    from_home = settings.home is not None and settings.database_url == database_url_in(Path(settings.home))
    if from_home and old.absolute() != path.absolute() and old.is_file():
        raise ConfigError(f"There is a nod.db in this folder (where Nod kept it before NOD_HOME) and none in {path.parent}; "
                          f"move it there (with its nod.db-wal, if any) or set NOD_HOME={old.absolute().parent}.")
    path.absolute().parent.mkdir(parents=True, exist_ok=True)
    if command == "run":  # on standard output, beside the start summary: news, not an error
        print(f"Creating a new database at {path.absolute()}.", flush=True)
    return True


def _quiet_stdout() -> None:
    """The reader of standard output went away (``| head -1``): drop what is left, say nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (a test's stream): nothing to silence
        pass


def main(argv: Sequence[str] | None = None, settings_class: type[Settings] = Settings) -> int:
    """``settings_class``: Nod's settings with another set of channels (``Settings.with_channels``)."""
    parser = _parser(settings_class.channels)
    args = parser.parse_args(argv)
    if args.command == "tool" and not args.batch and not args.tool:
        parser.error("nod tool needs a TOOL name, or --batch")
    if getattr(args, "replace", False) and not args.json:
        parser.error("--replace goes with --json: a Markdown import adds notes and never replaces any")
    database_url = DEFAULT_URL
    if args.command == "doctor":  # its own lines, a broken setting among them
        return asyncio.run(doctor(sys.stdout))
    try:
        settings = load_settings(settings=settings_class)
        database_url = settings.database_url
        # a one-shot command's output is its answer; its routine log lines would be noise
        configure_logging(settings.log_level or ("INFO" if args.command == "run" else "WARNING"), settings.log_text)
        if args.command == "backup":  # opens nothing that writes (no migration, no index): never waits for nod run
            print(asyncio.run(cli_operator.backup(settings, args.file)))
            sys.stdout.flush()
            return 0
        args.created = _database_rule(args.command, settings)
        if args.command == "db":  # the schema alone: nothing else of Nod is opened
            print(asyncio.run(cli_operator.db(settings, args.action, getattr(args, "json", False))))
            sys.stdout.flush()
            return 0
        if args.command == "run":
            from bot.run import run_server  # the channels' SDKs load only for `nod run`

            asyncio.run(run_server(settings))
        else:
            asyncio.run(_run_action(settings, _action(args, settings)))
        sys.stdout.flush()  # here, where a closed pipe is still caught, not at exit
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except NodError as exc:
        sys.stderr.write(f"nod: {exc}\n")
        return 1
    except SQLAlchemyError as exc:  # a database failure mid-command: the driver's reason, never the SQL
        sys.stderr.write(f"nod: {storage_error(exc, database_url)}\n")
        return 1
    except OSError as exc:
        sys.stderr.write(f"nod: {exc.strerror or exc}.\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the edge: log the detail, tell the person one sentence
        log.debug("unexpected failure", exc_info=True)
        sys.stderr.write(f"nod: unexpected {type(exc).__name__}; run with NOD_LOG_LEVEL=DEBUG for details.\n")
        return 1
    return 0
