"""``nod`` refusing what it cannot do, in process through ``bot.cli.main(argv)`` (issue 14: 6, 9).

Each case is one sentence on standard error and exit status 1, never a traceback and never
"unexpected …Error".
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from bot.cli import main
from tests.fakes.loopback import NOD_PREFIXES


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with its own database and no Nod settings from the developer's shell."""
    import os

    for name in list(os.environ):
        if name.startswith(NOD_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NOD_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'nod.db'}")
    return tmp_path


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "unexpected" not in err, err
    return err


# aiosqlite's worker thread for the connection that failed to open outlives asyncio.run here
# and reports to the closed loop; a real `nod` process exits first (checked by hand: clean)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_database_that_cannot_be_opened_is_one_sentence_naming_it(
        here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOD_DATABASE_URL", f"sqlite+aiosqlite:///{here / 'missing' / 'nod.db'}")
    assert _refused(capsys, "owners", "list") == (
        f"nod: The SQLite file {here / 'missing' / 'nod.db'} failed: unable to open database file.")
    (here / "folder.db").mkdir()
    monkeypatch.setenv("NOD_DATABASE_URL", f"sqlite+aiosqlite:///{here / 'folder.db'}")
    assert _refused(capsys, "owners", "list").startswith(f"nod: The SQLite file {here / 'folder.db'} failed: ")


def test_an_import_line_dated_in_year_one_is_a_sentence(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["owners", "add", "ana"]) == 0
    lines = here / "old.jsonl"
    lines.write_text(json.dumps({"role": "owner", "text": "hi", "sent_at": "0001-01-01T00:00:00+05:00"}) + "\n")
    assert "between the years 1900 and 2199" in _refused(capsys, "history", "import", "--owner", "ana", str(lines))


@pytest.mark.parametrize("path,text", [
    ("about/card", "My card 4111.1111.1111.1111"), ("about/4111-1111-1111-1111", "a harmless note"),
    ("about/pin", "card 4111_1111_1111_1111 expires"), ("about/nums", "4111 1111 1111 1111"),
])
def test_a_card_written_any_way_is_refused_in_any_field(
        here: Path, capsys: pytest.CaptureFixture[str], path: str, text: str) -> None:
    assert main(["owners", "add", "ana"]) == 0
    assert "card number" in _refused(capsys, "memory", "add", "--owner", "ana", path, text)


def test_an_import_skips_cards_with_dots_and_builds_no_slug_from_them(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["owners", "add", "ana"]) == 0
    answer = here / "answer.md"
    answer.write_text("## About you\n- 4111.1111.1111.1111\n- Card 4111/1111/1111/1111 for travel\n- Likes figs\n")
    capsys.readouterr()
    assert main(["memory", "import", "--owner", "ana", str(answer)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Saved 1 notes, skipped 2.") and out.count("looks like a secret") == 2
    assert main(["memory", "show", "--owner", "ana", "--json"]) == 0
    assert "4111" not in capsys.readouterr().out


def test_a_batch_line_no_engine_can_take_is_answered_and_the_rest_go_on(
        here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["owners", "add", "ana"]) == 0
    calls = [{"tool": "history_search", "args": {"query": "x", "to": "9999-12-31"}},
             {"tool": "history_search", "args": {"around": 2**63}},
             {"tool": "memory_read", "args": {"path": "about"}}]
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(json.dumps(c) + "\n" for c in calls)))
    capsys.readouterr()
    assert main(["tool", "--owner", "ana", "--batch"]) == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [set(r) for r in results] == [{"error"}, {"error"}, {"area", "entries", "count"}]
