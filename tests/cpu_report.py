"""A pytest plugin that says where the suite's CPU time goes: ``pytest -p tests.cpu_report``.

Wall time hides the cost that matters on a shared machine; this records CPU (user + system) of
pytest itself (``time.process_time``) and of the child processes it waited for (``nod run``,
Playwright's driver and Chromium: ``RUSAGE_CHILDREN``, counted when a child is reaped) per test
phase and per fixture setup, and prints the biggest consumers by file, by fixture and by test.
``NOD_CPU_REPORT=FILE`` also writes every row as tab-separated text. docs/testing.md explains.
"""

from __future__ import annotations

import os
import resource
import time
from collections import defaultdict
from collections.abc import Generator
from typing import Any

import pytest

_tests: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])  # setup, call, teardown, children
_fixtures: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # CPU, count
_start = (0.0, 0.0)


def _children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pytest_sessionstart(session: pytest.Session) -> None:
    global _start
    _start = (time.process_time(), _children())


def _phase(item: pytest.Item, index: int) -> Generator[None, Any, None]:
    own, children = time.process_time(), _children()
    yield
    row = _tests[item.nodeid]
    row[index] += time.process_time() - own
    row[3] += _children() - children


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, None]:
    yield from _phase(item, 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, None]:
    yield from _phase(item, 1)


class _SessionEnd:
    """Where the last test's teardown goes: it also ends the session's fixtures (the shared Chromium)."""

    nodeid = "(the last test's teardown, with the session fixtures')"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, None]:
    yield from _phase(item if nextitem is not None else _SessionEnd(), 2)  # type: ignore[arg-type]


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Generator[None, Any, None]:
    """A fixture's own setup: the fixtures it asks for are set up before this hook runs."""
    own = time.process_time() + _children()
    yield
    row = _fixtures[fixturedef.argname]
    row[0] += time.process_time() + _children() - own
    row[1] += 1


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _top(title: str, rows: dict[str, float], counts: dict[str, float], limit: int) -> list[str]:
    lines = [f"--- {title} (CPU s, count)"]
    for name, cpu in sorted(rows.items(), key=lambda kv: -kv[1])[:limit]:
        lines.append(f"{cpu:8.2f} {int(counts.get(name, 0)):5d}  {name}")
    return lines


def pytest_terminal_summary(terminalreporter: Any) -> None:
    own = time.process_time() - _start[0]
    children = _children() - _start[1]
    by_file: dict[str, float] = defaultdict(float)
    per_file: dict[str, float] = defaultdict(float)
    for nodeid, row in _tests.items():
        by_file[_file(nodeid)] += sum(row)
        per_file[_file(nodeid)] += 1
    tests = {nodeid: sum(row) for nodeid, row in _tests.items()}
    phases = [sum(row[i] for row in _tests.values()) for i in range(4)]
    lines = [f"CPU: pytest {own:.1f} s + waited children {children:.1f} s = {own + children:.1f} s; "
             f"in tests: setup {phases[0]:.1f}, call {phases[1]:.1f}, teardown {phases[2]:.1f}, children {phases[3]:.1f}"]
    lines += _top("by file", by_file, per_file, 40)
    lines += _top("by fixture (own setup)", {k: v[0] for k, v in _fixtures.items()},
                  {k: v[1] for k, v in _fixtures.items()}, 30)
    lines += _top("by test", tests, {}, 40)
    for line in lines:
        terminalreporter.write_line(line)
    out = os.environ.get("NOD_CPU_REPORT")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            for nodeid, row in sorted(_tests.items()):
                f.write("test\t" + nodeid + "\t" + "\t".join(f"{v:.4f}" for v in row) + "\n")
            for name, (cpu, count) in sorted(_fixtures.items()):
                f.write(f"fixture\t{name}\t{cpu:.4f}\t{int(count)}\n")
