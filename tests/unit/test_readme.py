"""The README's promises that CI and operators rely on stay true."""

from __future__ import annotations

import re
from pathlib import Path

from bot.settings import variable_names

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.+?)\n```", quick)


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_test_one() -> None:
    run, test = _readme_commands()
    assert run.endswith("nod run") and "pytest" in test
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test in ci


def test_env_example_and_readme_list_every_setting() -> None:
    example = (ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^([A-Z_]+)=", example, re.M))
    readme = (ROOT / "README.md").read_text()
    assert listed == set(variable_names())
    for name in variable_names():
        assert f"`{name}`" in readme, name
