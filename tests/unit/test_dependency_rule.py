"""DESIGN.md's dependency rule, checked by import-linter; and proof that the check bites."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

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


def test_a_core_module_importing_an_sdk_breaks_the_check(tmp_path: Path) -> None:
    for part in ("core", "adapters", "bot"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "core" / "leak.py").write_text("import aiohttp\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "core.leak" in result.stdout
