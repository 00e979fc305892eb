"""The operator's ``nod``: one data directory, help and examples, JSON listings, standard input,
owners removed, renamed and unlinked (issue 43: 9, 10, 11). A closed pipe and a busy port are
process tests (tests/e2e/test_cli.py)."""

from __future__ import annotations

import argparse
import io
import json
import sqlite3
from pathlib import Path

import pytest

from adapters.storage import legacy
from adapters.storage.migrations import revisions
from bot.cli_parser import parser
from tests.cli_runner import one_sentence
from tests.integration.cli.conftest import Nod

LATEST = revisions()[-1].revision
ALL = ", ".join(r.revision for r in revisions())


def test_commands_from_any_folder_find_the_same_data_in_nod_home(cli: Nod, bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43: 9. In another folder `nod owners list` made a new empty nod.db and said "No owners yet"."""
    home = bare / "home"
    missing = cli("owners", "list")
    assert missing.returncode == 1 and one_sentence(missing).startswith(f"nod: There is no Nod database at {home / 'nod.db'}")
    assert not home.exists()  # nothing made
    created = cli("init")
    assert created.returncode == 0 and created.stdout.startswith(f"Created the SQLite file {home / 'nod.db'}")
    assert cli("owners", "add", "ana", "--tz", "Europe/Lisbon").returncode == 0
    (home / ".env").write_text("NOD_SPENDING_LIMIT_USD=3\n")
    elsewhere = bare / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    assert cli("owners", "list").stdout.strip() == "ana\tEurope/Lisbon\tno channels"
    assert "of a $3.00 limit" in cli("usage", "--owner", "ana").stdout  # .env read from NOD_HOME, not from here
    assert sorted(p.name for p in elsewhere.iterdir()) == []
    again = cli("init")
    assert again.returncode == 0 and again.stdout.strip().endswith(f"is ready (schema revision {LATEST}); nothing to create.")


def test_run_refuses_to_start_a_new_database_beside_the_one_an_older_version_kept_here(cli: Nod, bare: Path) -> None:
    sqlite3.connect(bare / "nod.db").close()
    refused = cli("init")
    assert refused.returncode == 1 and "There is a nod.db in this folder" in one_sentence(refused)
    assert not (bare / "home" / "nod.db").exists()


def _options(top: argparse.ArgumentParser, path: str = "nod") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, top)]
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _options(sub, f"{path} {name}")
    return found


def test_every_option_has_help_and_every_command_an_example() -> None:
    for path, command in _options(parser()):
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
                continue
            assert action.help, f"{path} {action.option_strings or action.dest} has no help"
        assert command.epilog and "example" in command.epilog and f"{path}" in command.epilog, path


def test_version_comes_from_the_package(cli: Nod, bare: Path) -> None:
    from importlib.metadata import version

    result = cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"nod {version('nod')}"


def test_every_listing_has_json(cli: Nod, here: Path) -> None:
    assert cli("owners", "add", "ana", "--telegram", "42").returncode == 0
    owners = json.loads(cli("owners", "list", "--json").stdout)
    assert owners[0]["name"] == "ana" and owners[0]["identities"] == [{"channel": "telegram", "external_id": "42"}]
    usage = json.loads(cli("usage", "--owner", "ana", "--json").stdout)
    assert usage["today"] == [] and usage["limit_usd"] == 10.0
    assert json.loads(cli("skills", "list", "--owner", "ana", "--json").stdout) == []
    assert json.loads(cli("memory", "archive", "list", "--owner", "ana", "--json").stdout) == []


def test_history_import_reads_standard_input_takes_user_as_owner_and_names_the_roles(cli: Nod, here: Path) -> None:
    assert cli("owners", "add", "ana").returncode == 0
    lines = [{"role": "user", "text": "I moved to Porto", "sent_at": "2024-05-01T10:00:00+00:00"},
             {"role": "assistant", "text": "Noted", "sent_at": "2024-05-01T10:00:05+00:00"}]
    done = cli("history", "import", "--owner", "ana", "-", stdin="".join(json.dumps(line) + "\n" for line in lines))
    assert done.returncode == 0 and "Imported 2 new messages of 2 lines" in done.stdout
    found = json.loads(cli("tool", "--owner", "ana", "history_search", '{"query": "Porto"}').stdout)
    assert found["results"][0]["role"] == "owner"
    for line, said in (({"role": "system", "text": "x", "sent_at": "2024-05-01T10:00:00"},
                        "nod: Line 1: the role must be owner (or user) or assistant, not 'system'."),
                       ({"role": "owner", "sent_at": "2024-05-01T10:00:00"}, "it has no text"),
                       ({"role": "owner", "text": "x", "sent_at": "yesterday"}, "sent_at must be an ISO 8601 time")):
        refused = cli("history", "import", "--owner", "ana", "-", stdin=json.dumps(line) + "\n")
        sentence = one_sentence(refused)
        assert refused.returncode == 1 and said in sentence and "Error" not in sentence
    assert "owner" in cli("history", "import", "--help").stdout and '"user"' in cli("history", "import", "--help").stdout


def test_owners_are_renamed_unlinked_and_removed_with_everything_of_theirs(cli: Nod, here: Path) -> None:
    assert cli("owners", "add", "ana", "--telegram", "42", "--whatsapp", "+351911").returncode == 0
    assert cli("owners", "add", "bo", "--telegram", "43").returncode == 0
    for owner in ("ana", "bo"):
        lines = [json.dumps({"role": "owner", "text": f"{owner} likes figs and Porto", "sent_at": "2024-05-01T10:00:00"})]
        assert cli("history", "import", "--owner", owner, "-", stdin="\n".join(lines) + "\n").returncode == 0
        assert cli("memory", "add", "--owner", owner, "about/figs", f"{owner} likes figs").returncode == 0
    assert json.loads(cli("tool", "--owner", "ana", "history_search", '{"query": "figs"}').stdout)["results"]  # index built

    assert cli("owners", "rename", "ana", "ana-maria").stdout.strip() == "Renamed ana to ana-maria."
    taken = cli("owners", "rename", "bo", "ana-maria")
    assert taken.returncode == 1 and "already an owner named" in one_sentence(taken)
    assert cli("owners", "unlink", "ana-maria", "--whatsapp", "+351911").stdout.strip() == (
        "Unlinked whatsapp:+351911 from ana-maria.")
    not_hers = cli("owners", "unlink", "ana-maria", "--telegram", "43")
    assert not_hers.returncode == 1 and "not linked" in one_sentence(not_hers)

    unconfirmed = cli("owners", "remove", "ana-maria")  # standard input is not a terminal
    assert unconfirmed.returncode == 1 and "add --yes" in one_sentence(unconfirmed)
    removed = cli("owners", "remove", "ana-maria", "--yes")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.startswith("Removed ana-maria: 1 messages, their memory, 1 identities")
    assert "search index was deleted too" in removed.stdout
    with sqlite3.connect(here / "nod.db") as db:
        left = {table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608 - fixed names
                for table in ("owners", "identities", "threads", "messages", "objects")}
        fts = db.execute("SELECT count(*) FROM search_fts WHERE search_fts MATCH 'figs'").fetchone()[0]
    assert left == {"owners": 1, "identities": 1, "threads": 1, "messages": 1, "objects": 1} and fts == 1
    assert cli("owners", "list").stdout.strip() == "bo\tUTC\ttelegram:43"
    assert [r["text"] for r in json.loads(cli("tool", "--owner", "bo", "history_search", '{"query": "figs"}').stdout)
            ["results"]] == ["bo likes figs and Porto"]
    gone = cli("memory", "show", "--owner", "ana-maria")
    assert gone.returncode == 1 and "No owner named" in one_sentence(gone)


def test_link_names_an_identity_on_any_channel_through_that_channels_own_parser(cli: Nod, here: Path) -> None:
    """``--link CHANNEL:ID`` (issue 40): each channel checks its own ids; the older flags still work beside it."""
    added = cli("owners", "add", "ana", "--link", "telegram:42", "--link", "WhatsApp:+351 911", "--telegram", "7")
    assert added.returncode == 0, added.stderr
    assert json.loads(cli("owners", "list", "--json").stdout)[0]["identities"] == [
        {"channel": "telegram", "external_id": "42"}, {"channel": "whatsapp", "external_id": "+351911"},
        {"channel": "telegram", "external_id": "7"}]
    for bad, said in (("telegram:@ana", "numeric user id"), ("whatsapp:351911", "+<digits>"),
                      ("signal:+351911", "no channel 'signal'"), ("telegram", "CHANNEL:ID")):
        refused = cli("owners", "link", "ana", "--link", bad)
        assert refused.returncode == 1 and said in one_sentence(refused), (bad, refused.stderr)
    assert cli("owners", "unlink", "ana", "--link", "telegram:7").stdout.strip() == "Unlinked telegram:7 from ana."
    assert "exactly one" in one_sentence(cli("owners", "unlink", "ana", "--link", "telegram:42", "--telegram", "42"))


def test_remove_asks_on_a_terminal(here: Path, cli: Nod) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert cli("owners", "add", "ana").returncode == 0
    assert cli("owners", "remove", "ana", stdin=Terminal("bo\n")).returncode == 1
    assert cli("owners", "remove", "ana", stdin=Terminal("ana\n")).returncode == 0
    assert "No owners yet" in cli("owners", "list").stdout


def test_backup_on_postgresql_says_how_and_on_a_missing_database_says_so(cli: Nod, bare: Path) -> None:
    postgres = cli("backup", str(bare / "x.dump"), NOD_DATABASE_URL="postgresql+asyncpg://nod@127.0.0.1:1/nod")
    assert postgres.returncode == 1 and "pg_dump --format=custom --file FILE DBNAME" in one_sentence(postgres)
    missing = cli("backup", str(bare / "copy.db"))
    assert missing.returncode == 1 and "There is no Nod database at" in one_sentence(missing)
    assert not (bare / "copy.db").exists() and not (bare / "home").exists()


def test_replace_without_json_is_bad_usage(cli: Nod, here: Path) -> None:
    result = cli("memory", "import", "--replace", "--owner", "ana", "x.md")
    assert result.returncode == 2 and "--replace goes with --json" in one_sentence(result)


def test_db_current_history_and_upgrade(cli: Nod, bare: Path) -> None:
    (bare / "home").mkdir()
    sqlite3.connect(bare / "home" / "nod.db").close()  # a database file nothing has migrated yet
    current = cli("db", "current")
    assert current.returncode == 0 and current.stdout.startswith(f"none (pending: {ALL};")
    first = revisions()[0]
    assert cli("db", "history").stdout.splitlines()[0].split(None, 2) == [first.revision, "pending", first.doc]
    assert first.doc.startswith("baseline: the schema of Nod's twelve numbered migrations")
    upgraded = cli("db", "upgrade")
    assert upgraded.stdout.strip() == f"The schema is at revision {LATEST} (applied {ALL} now)."
    assert cli("db", "current").stdout.strip() == LATEST
    assert json.loads(cli("db", "current", "--json").stdout) == {"current": LATEST, "head": LATEST, "pending": [],
                                                                 "legacy_version": None, "legacy_missing": []}
    assert cli("db", "upgrade").stdout.strip() == f"The schema is at revision {LATEST} (nothing to apply)."
    assert all("  applied  " in line for line in cli("db", "history").stdout.splitlines())
    assert [r["applied"] for r in json.loads(cli("db", "history", "--json").stdout)] == [True] * len(revisions())


def test_db_upgrade_takes_over_a_database_of_the_numbered_migrations(cli: Nod, bare: Path) -> None:
    """A nod.db made before Alembic, stopped at numbered migration 10: `nod db current` says what
    `nod db upgrade` will do, and the upgrade applies 11 and 12 and stamps the baseline."""
    (bare / "home").mkdir()
    with sqlite3.connect(bare / "home" / "nod.db") as conn:
        conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
        for step in legacy.MIGRATIONS[:10]:
            conn.executescript(";\n".join(step.sqlite) + ";")
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, CURRENT_TIMESTAMP)", (step.version, step.name))
    stamp = legacy.STAMP
    after = [r.revision for r in revisions()][[r.revision for r in revisions()].index(stamp) + 1:]
    missing = ", ".join(str(m.version) for m in legacy.MIGRATIONS[10:])
    current = cli("db", "current")
    assert current.returncode == 0 and current.stdout.strip() == (
        f"numbered migration 10, from before Alembic (pending: numbered migrations {missing}, then taking the database over "
        f"as {stamp}{''.join(', then ' + r for r in after)}; `nod db upgrade` does it)")
    assert all("  pending  " in line for line in cli("db", "history").stdout.splitlines())
    upgraded = cli("db", "upgrade")
    assert upgraded.stdout.strip() == (f"The schema is at revision {LATEST} (numbered migrations {missing} applied, then the "
                                       f"database of the numbered migrations taken over as {stamp}; "
                                       + (f"applied {', '.join(after)} now)." if after else "nothing else to apply)."))
    assert cli("db", "current").stdout.strip() == LATEST


def test_a_database_newer_than_this_nod_is_refused_in_one_sentence(cli: Nod, here: Path) -> None:
    with sqlite3.connect(here / "nod.db") as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0099_from_the_future'")
    for argv in (("db", "upgrade"), ("db", "current"), ("db", "history"), ("owners", "list")):
        refused = cli(*argv)
        assert refused.returncode == 1 and one_sentence(refused) == (
            "nod: The database's schema is at revision 0099_from_the_future, which this version of Nod does not know: a newer "
            "Nod upgraded it. Run that version, or restore a backup taken before the upgrade."), argv
