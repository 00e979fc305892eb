"""DESIGN.md's dependency rule, checked by import-linter; and proof that the check bites."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(exe), "--config", str(cwd / "pyproject.toml")],
        cwd=cwd, capture_output=True, text=True, env={"PYTHONPATH": str(cwd), "PATH": ""},
    )


def test_the_tree_keeps_the_rule() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("leak", "code"), [
    ("core/leak.py", "import aiohttp\n"),  # an SDK in core
    ("core/agent/leak.py", "import sqlalchemy\n"),  # the database outside adapters.storage
    ("core/history/leak.py", "import tantivy\n"),  # the search engine outside the derived index
    ("core/evidence/leak.py", "from adapters.storage.message_store import MessageStore\n"),  # storage, not its port
    ("adapters/web/leak.py", "import adapters.telegram\n"),  # one adapter in another
])
def test_each_contract_bites_when_broken(tmp_path: Path, leak: str, code: str) -> None:
    for part in ("core", "adapters", "bot"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / leak).write_text(code)
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert leak.removesuffix(".py").replace("/", ".") in result.stdout
