"""The ``nod`` command line: argument parsing and the edge where errors become sentences.

Exit status 0 on success, 1 when an action is refused or fails, 2 on bad usage. Errors
are one sentence on standard error, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import NoReturn

from sqlalchemy.exc import SQLAlchemyError

from bot import cli_data, cli_gmail, cli_schedules, cli_talk
from bot.logs import configure_logging
from bot.settings import Settings, load_settings
from bot.wiring import Services, services
from core.errors import NodError
from core.storage.database import DEFAULT_URL, storage_error

log = logging.getLogger("nod.cli")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"nod: {message} (see `{self.prog} --help`).\n")
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="nod", description="Nod, a personal assistant with a memory you can trust.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("run", help="serve the web server and every configured channel")

    owners = sub.add_parser("owners", help="owners and their channel identities")
    owners_sub = owners.add_subparsers(dest="action", required=True, parser_class=_Parser)
    add = owners_sub.add_parser("add", help="add an owner")
    add.add_argument("name")
    add.add_argument("--telegram", action="append", default=[], metavar="ID")
    add.add_argument("--whatsapp", action="append", default=[], metavar="+NUMBER")
    add.add_argument("--tz", default="UTC", metavar="ZONE")
    link = owners_sub.add_parser("link", help="link more Telegram ids or WhatsApp numbers to an owner")
    link.add_argument("name")
    link.add_argument("--telegram", action="append", default=[], metavar="ID")
    link.add_argument("--whatsapp", action="append", default=[], metavar="+NUMBER")
    owners_sub.add_parser("list", help="list owners")
    oset = owners_sub.add_parser("set", help="change an owner's settings")
    oset.add_argument("name")
    oset.add_argument("--spending-limit", metavar="USD", help="monthly limit in US dollars, or 'default'")
    oset.add_argument("--tz", metavar="ZONE", help="the owner's IANA time zone, such as Europe/Lisbon")

    chat = sub.add_parser("chat", help="talk to Nod in the terminal (one message a line when piped)")
    chat.add_argument("--owner", required=True)
    maintenance = sub.add_parser("maintenance", help="the hourly memory maintenance")
    maintenance_sub = maintenance.add_subparsers(dest="action", required=True, parser_class=_Parser)
    tick = maintenance_sub.add_parser("run", help="run one maintenance tick now")
    tick.add_argument("--owner", help="only this owner")
    usage = sub.add_parser("usage", help="model calls and cost, today and this month, by purpose")
    usage.add_argument("--owner", required=True)

    history = sub.add_parser("history", help="conversation history")
    history_sub = history.add_subparsers(dest="action", required=True, parser_class=_Parser)
    imp = history_sub.add_parser("import", help="import JSON Lines messages")
    imp.add_argument("--owner", required=True)
    imp.add_argument("file", type=Path)

    memory = sub.add_parser("memory", help="the owner's memory document")
    memory_sub = memory.add_subparsers(dest="action", required=True, parser_class=_Parser)
    show = memory_sub.add_parser("show", help="print the memory")
    show.add_argument("--owner", required=True)
    show.add_argument("--json", action="store_true")
    export = memory_sub.add_parser("export", help="print the memory as Markdown")
    export.add_argument("--owner", required=True)
    madd = memory_sub.add_parser("add", help="add or rewrite a stated note")
    madd.add_argument("--owner", required=True)
    madd.add_argument("path", metavar="AREA/SLUG")
    madd.add_argument("text")
    madd.add_argument("--abstract")
    madd.add_argument("--expires", metavar="DATE")
    mimport = memory_sub.add_parser("import", help="save another assistant's answer as stated notes")
    mimport.add_argument("--owner", required=True)
    mimport.add_argument("file", type=Path)
    forget = memory_sub.add_parser("forget", help="delete a note and its archived versions")
    forget.add_argument("--owner", required=True)
    forget.add_argument("path", metavar="AREA/SLUG")
    skills = sub.add_parser("skills", help="the owner's learned skills")
    skills_sub = skills.add_subparsers(dest="action", required=True, parser_class=_Parser)
    skills_sub.add_parser("list", help="name and description of each").add_argument("--owner", required=True)
    for verb, what in (("show", "print one skill"), ("forget", "delete one skill")):
        one = skills_sub.add_parser(verb, help=what)
        one.add_argument("name")
        one.add_argument("--owner", required=True)
    page = sub.add_parser("page", help="a one-time sign-in link to the owner's memory page")
    page.add_argument("--owner", required=True)
    page.add_argument("--revoke", action="store_true", help="end the owner's page sessions instead")
    gmail = sub.add_parser("gmail", help="the Gmail writing-style connection")
    gmail_sub = gmail.add_subparsers(dest="action", required=True, parser_class=_Parser)
    for verb, what in (("connect", "print Google's consent link for the owner"),
                       ("disconnect", "revoke the owner's Gmail access and delete the token"),
                       ("refresh", "learn the writing style from the owner's sent mail now")):
        gmail_sub.add_parser(verb, help=what).add_argument("--owner", required=True)
    cli_schedules.add_commands(sub, _Parser)
    tool = sub.add_parser("tool", help="run one read-only agent tool and print its JSON result")
    tool.add_argument("--owner", required=True)
    tool.add_argument("--batch", action="store_true", help="read JSON Lines {tool, args} on standard input")
    tool.add_argument("tool", nargs="?", help="memory_read, memory_find or history_search")
    tool.add_argument("args", nargs="?", default="{}", metavar="JSON-ARGS")
    return parser


def _action(args: argparse.Namespace) -> Callable[[Services], Awaitable[str]]:
    key = (args.command, getattr(args, "action", None))
    table: dict[tuple[str, str | None], Callable[[Services], Awaitable[str]]] = {
        ("owners", "add"): lambda s: cli_data.owners_add(
            s, args.name, args.telegram, args.whatsapp, args.tz
        ),
        ("owners", "link"): lambda s: cli_data.owners_link(s, args.name, args.telegram, args.whatsapp),
        ("owners", "list"): cli_data.owners_list,
        ("owners", "set"): lambda s: cli_talk.owners_set(s, args.name, args.spending_limit, args.tz),
        ("chat", None): lambda s: cli_talk.chat(s, args.owner),
        ("usage", None): lambda s: cli_talk.usage(s, args.owner),
        ("maintenance", "run"): lambda s: cli_talk.maintenance_run(s, args.owner),
        ("history", "import"): lambda s: cli_data.history_import(
            s, args.owner, args.file, cli_data.stderr_progress()
        ),
        ("memory", "show"): lambda s: cli_data.memory_show(s, args.owner, args.json),
        ("memory", "export"): lambda s: cli_data.memory_export(s, args.owner),
        ("memory", "add"): lambda s: cli_data.memory_add(
            s, args.owner, args.path, args.text, args.abstract, args.expires
        ),
        ("memory", "forget"): lambda s: cli_data.memory_forget(s, args.owner, args.path),
        ("memory", "import"): lambda s: cli_data.memory_import(s, args.owner, args.file),
        ("page", None): lambda s: cli_data.page(s, args.owner, args.revoke),
        ("gmail", "connect"): lambda s: cli_gmail.connect(s, args.owner),
        ("gmail", "disconnect"): lambda s: cli_gmail.disconnect(s, args.owner),
        ("gmail", "refresh"): lambda s: cli_gmail.refresh(s, args.owner),
        ("skills", "list"): lambda s: cli_data.skills_list(s, args.owner),
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "tool" and not args.batch and not args.tool:
        parser.error("nod tool needs a TOOL name, or --batch")
    database_url = DEFAULT_URL
    try:
        settings = load_settings()
        database_url = settings.database_url
        # a one-shot command's output is its answer; its routine log lines would be noise
        configure_logging(settings.log_level or ("INFO" if args.command == "run" else "WARNING"), settings.log_text)
        if args.command == "run":
            from bot.run import run_server  # the channels' SDKs load only for `nod run`

            asyncio.run(run_server(settings))
        else:
            asyncio.run(_run_action(settings, _action(args)))
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
