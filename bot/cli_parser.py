"""The ``nod`` command's arguments: every command, every option with its help, and an example each.

Kept apart from ``bot.cli`` (which runs a command and turns its failures into sentences)
so the whole surface reads in one place; ``tests/integration/cli/test_operator.py`` walks this
parser and fails on an option without help or a command without an example.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import NoReturn

from bot.channels import CHANNELS, Registry

STDIN = "-"  # a FILE argument that means standard input


class Parser(argparse.ArgumentParser):
    """argparse with a bad-usage message of one sentence and exit status 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"nod: {message} (see `{self.prog} --help`).\n")
        raise SystemExit(2)


def nod_version() -> str:
    """The installed package's version: pyproject.toml is the one place it is written."""
    try:
        return version("nod")
    except PackageNotFoundError:  # a checkout run without installing
        return "unknown (not installed; pip install -e .)"


def _command(sub: argparse._SubParsersAction[Parser], name: str, help_text: str, *examples: str) -> Parser:
    """A subcommand whose help ends with its examples."""
    epilog = "example" + ("s" if len(examples) > 1 else "") + ":\n" + "\n".join(f"  {e}" for e in examples)
    parser: Parser = sub.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".",
                                    epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser


def _owner(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("--owner", required=required, metavar="NAME", help="the owner's name, as in `nod owners list`")


def _json(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON instead of text")


def _as_link(channel: str) -> Callable[[str], str]:
    return lambda raw: f"{channel}:{raw}"


# the flags from before --link, still read: each is --link CHANNEL:ID
LEGACY_FLAGS = (("telegram", "ID"), ("whatsapp", "+NUMBER"))


def _identities(parser: argparse.ArgumentParser, verb: str, channels: Registry) -> None:
    examples = " or ".join(f"{kind.name}:{kind.example}" for kind in channels.values())
    parser.add_argument("--link", action="append", default=[], metavar="CHANNEL:ID",
                        help=f"an identity to {verb}, CHANNEL one of {', '.join(channels)} (repeatable), e.g. {examples}")
    for channel, metavar in LEGACY_FLAGS:
        parser.add_argument(f"--{channel}", action="append", dest="link", type=_as_link(channel), metavar=metavar,
                            help=f"the same as --link {channel}:{metavar} (the older form)")


def _owners(sub: argparse._SubParsersAction[Parser], channels: Registry) -> None:
    owners = _command(sub, "owners", "owners and their channel identities", "nod owners list")
    verbs = owners.add_subparsers(dest="action", required=True, parser_class=Parser)
    add = _command(verbs, "add", "add an owner", "nod owners add ana --link telegram:123456789 --tz Europe/Lisbon")
    add.add_argument("name", help="the owner's name (unique)")
    _identities(add, "link", channels)
    add.add_argument("--tz", default="UTC", metavar="ZONE", help="the owner's IANA time zone (default UTC)")
    link = _command(verbs, "link", "link more identities (a Telegram id, a WhatsApp number…) to an owner",
                    "nod owners link ana --link whatsapp:+351912345678")
    link.add_argument("name", help="the owner's name")
    _identities(link, "link", channels)
    unlink = _command(verbs, "unlink", "remove one identity from an owner", "nod owners unlink ana --link telegram:123456789")
    unlink.add_argument("name", help="the owner's name")
    _identities(unlink, "unlink", channels)
    _json(_command(verbs, "list", "list owners", "nod owners list", "nod owners list --json"), "the owners")
    oset = _command(verbs, "set", "change an owner's settings", "nod owners set ana --spending-limit 5 --tz Asia/Tokyo")
    oset.add_argument("name", help="the owner's name")
    oset.add_argument("--spending-limit", metavar="USD", help="monthly limit in US dollars, or 'default'")
    oset.add_argument("--tz", metavar="ZONE", help="the owner's IANA time zone, such as Europe/Lisbon")
    rename = _command(verbs, "rename", "give an owner another name", "nod owners rename ana ana-maria")
    rename.add_argument("old", help="the owner's name now")
    rename.add_argument("new", help="the new name")
    remove = _command(verbs, "remove", "delete an owner and everything of theirs (messages, memory, identities, "
                      "sessions, usage) in one transaction", "nod owners remove ana --yes")
    remove.add_argument("name", help="the owner's name")
    remove.add_argument("--yes", action="store_true", help="do not ask first (needed when standard input is not a terminal)")


def _memory(sub: argparse._SubParsersAction[Parser]) -> None:
    memory = _command(sub, "memory", "the owner's memory document", "nod memory show --owner ana")
    verbs = memory.add_subparsers(dest="action", required=True, parser_class=Parser)
    show = _command(verbs, "show", "print the memory", "nod memory show --owner ana --json")
    _owner(show)
    _json(show, "the stored document")
    export = _command(verbs, "export", "print the memory as Markdown, or losslessly as JSON",
                      "nod memory export --owner ana > ana.md", "nod memory export --json --owner ana > ana.json")
    _owner(export)
    export.add_argument("--json", action="store_true",
                        help="the lossless JSON export (notes, evidence, archive, skills, settings) that "
                             "`nod memory import --json` reads back")
    mimport = _command(verbs, "import", "save another assistant's answer (or Nod's Markdown export) as stated notes, "
                       "or restore a JSON export", "nod memory import --owner ana answer.md",
                       "nod memory import --json --owner ana ana.json", "cat ana.json | nod memory import --json --owner ana -")
    _owner(mimport)
    mimport.add_argument("file", type=Path, metavar="FILE", help="the file to read, or - for standard input")
    mimport.add_argument("--json", action="store_true", help="FILE is a `nod memory export --json` document")
    mimport.add_argument("--replace", action="store_true",
                         help="with --json: replace the owner's memory even when it is not empty")
    madd = _command(verbs, "add", "add or rewrite a stated note",
                    "nod memory add --owner ana people/sister 'Sister: Ana, lives in Porto' --expires 2027-01-31")
    _owner(madd)
    madd.add_argument("path", metavar="AREA/SLUG", help="where the note goes, e.g. people/sister")
    madd.add_argument("text", help="the note, up to 4,000 characters")
    madd.add_argument("--abstract", help="an optional one-line summary")
    madd.add_argument("--expires", metavar="DATE", help="a date like 2027-01-31 after which maintenance lets it go")
    forget = _command(verbs, "forget", "delete a note and its archived versions", "nod memory forget --owner ana people/sister")
    _owner(forget)
    forget.add_argument("path", metavar="AREA/SLUG", help="the note to delete")
    archive = _command(verbs, "archive", "notes that were let go (replaced, merged, expired, stale, wrong)",
                       "nod memory archive list --owner ana")
    archive_verbs = archive.add_subparsers(dest="archive_action", required=True, parser_class=Parser)
    alist = _command(archive_verbs, "list", "list archived notes, newest last, each with its number",
                     "nod memory archive list --owner ana --json")
    _owner(alist)
    _json(alist, "the archived records")
    restore = _command(archive_verbs, "restore", "bring an archived note back (what stands at its path is archived)",
                       "nod memory archive restore --owner ana 3", "nod memory archive restore --owner ana people/sister")
    _owner(restore)
    restore.add_argument("which", metavar="NUMBER|AREA/SLUG",
                         help="the number `archive list` shows, or a path (its newest archived version)")


def _talking(sub: argparse._SubParsersAction[Parser]) -> None:
    chat = _command(sub, "chat", "talk to Nod in the terminal (one message a line when piped)", "nod chat --owner ana",
                    "echo 'What is my sister called?' | nod chat --owner ana")
    _owner(chat)
    maintenance = _command(sub, "maintenance", "the hourly memory maintenance", "nod maintenance run")
    maintenance_verbs = maintenance.add_subparsers(dest="action", required=True, parser_class=Parser)
    tick = _command(maintenance_verbs, "run", "run one maintenance tick now", "nod maintenance run --owner ana")
    _owner(tick, required=False)
    usage = _command(sub, "usage", "model calls and cost, today and this month, by purpose", "nod usage --owner ana --json")
    _owner(usage)
    _json(usage, "the totals")
    history = _command(sub, "history", "conversation history", "nod history import --owner ana chat.jsonl")
    history_verbs = history.add_subparsers(dest="action", required=True, parser_class=Parser)
    imp = _command(history_verbs, "import", 'import JSON Lines messages: {"role": "owner" (or "user") | "assistant", '
                   '"text": ..., "sent_at": ISO 8601, "id"?: ...}', "nod history import --owner ana chat.jsonl",
                   "zcat chat.jsonl.gz | nod history import --owner ana -")
    _owner(imp)
    imp.add_argument("file", type=Path, metavar="FILE", help="a JSON Lines file, or - for standard input")


def _pages(sub: argparse._SubParsersAction[Parser]) -> None:
    skills = _command(sub, "skills", "the owner's learned skills", "nod skills list --owner ana")
    skill_verbs = skills.add_subparsers(dest="action", required=True, parser_class=Parser)
    slist = _command(skill_verbs, "list", "name and description of each", "nod skills list --owner ana --json")
    _owner(slist)
    _json(slist, "the skills")
    for verb, what in (("show", "print one skill"), ("forget", "delete one skill")):
        one = _command(skill_verbs, verb, what, f"nod skills {verb} order-flowers --owner ana")
        one.add_argument("name", help="the skill's name, as `skills list` shows it")
        _owner(one)
    page = _command(sub, "page", "a one-time sign-in link to the owner's memory page", "nod page --owner ana",
                    "nod page --owner ana --revoke")
    _owner(page)
    page.add_argument("--revoke", action="store_true", help="end the owner's page sessions instead")
    gmail = _command(sub, "gmail", "the Gmail writing-style connection", "nod gmail connect --owner ana")
    gmail_verbs = gmail.add_subparsers(dest="action", required=True, parser_class=Parser)
    for verb, what in (("connect", "print Google's consent link for the owner"),
                       ("disconnect", "revoke the owner's Gmail access and delete the token"),
                       ("refresh", "learn the writing style from the owner's sent mail now")):
        _owner(_command(gmail_verbs, verb, what, f"nod gmail {verb} --owner ana"))
    tool = _command(sub, "tool", "run one read-only agent tool and print its JSON result",
                    "nod tool --owner ana history_search '{\"query\": \"sister\"}'",
                    "echo '{\"tool\": \"memory_read\", \"args\": {\"path\": \"people\"}}' | nod tool --owner ana --batch")
    _owner(tool)
    tool.add_argument("--batch", action="store_true", help="read JSON Lines {tool, args} on standard input")
    tool.add_argument("tool", nargs="?", help="memory_read, memory_find or history_search")
    tool.add_argument("args", nargs="?", default="{}", metavar="JSON-ARGS", help="the tool's arguments as JSON")


def _schedules(sub: argparse._SubParsersAction[Parser]) -> None:
    schedules = _command(sub, "schedules", "the owner's reminders and scheduled tasks", "nod schedules list --owner ana")
    verbs = schedules.add_subparsers(dest="action", required=True, parser_class=Parser)
    listing = _command(verbs, "list", "what is coming, soonest first, with numbers", "nod schedules list --owner ana --json")
    _owner(listing)
    _json(listing, "the schedules")
    cancel = _command(verbs, "cancel", "cancel one by its number", "nod schedules cancel 3 --owner ana")
    cancel.add_argument("id", type=int, metavar="ID", help="the schedule's number, from `nod schedules list`")
    _owner(cancel)
    _json(cancel, "the result")


def parser(channels: Registry = CHANNELS) -> argparse.ArgumentParser:
    """``channels``: the ones ``--link`` names (bot.channels' registry)."""
    top = Parser(prog="nod", description="Nod, a personal assistant with a memory you can trust. Its data lives in "
                 "NOD_HOME (see `nod doctor`).", epilog="example:\n  nod init && nod owners add ana --link telegram:123456789"
                 " && nod run", formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"nod {nod_version()}", help="print Nod's version and exit")
    sub = top.add_subparsers(dest="command", required=True, parser_class=Parser)
    _command(sub, "run", "serve the web server and every configured channel (creates the database if needed)", "nod run")
    _command(sub, "init", "create the data directory and the database (NOD_HOME), or bring its schema up to date",
             "NOD_HOME=/srv/nod nod init")
    _command(sub, "doctor", "check the settings, the database, its migrations, the search index and each configured "
             "server; one line each", "nod doctor")
    schema = _command(sub, "db", "the database's schema (Alembic revisions)", "nod db current", "nod db upgrade")
    db_verbs = schema.add_subparsers(dest="action", required=True, parser_class=Parser)
    _command(db_verbs, "upgrade", "apply the revisions not applied yet (nod run does at start); a database of the "
             "numbered migrations from before Alembic is taken over first", "nod db upgrade")
    _json(_command(db_verbs, "current", "print the schema's revision, and what is pending", "nod db current",
                   "nod db current --json"), "the revision, the newest and what is pending")
    _json(_command(db_verbs, "history", "list every revision, oldest first, applied or pending", "nod db history",
                   "nod db history --json"), "the revisions")
    backup = _command(sub, "backup", "copy the SQLite database, consistent while `nod run` writes",
                      "nod backup /var/backups/nod-$(date +%F).db")
    backup.add_argument("file", type=Path, metavar="FILE", help="where to write the copy (must not exist yet)")
    _owners(sub, channels)
    _talking(sub)
    _schedules(sub)
    _memory(sub)
    _pages(sub)
    return top
