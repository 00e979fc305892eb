"""Every schema Nod sends a model is strict-ready, and says what the server then enforces."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import core
from core.errors import UnreadableAnswer
from core.maintenance.operations import Reflection
from core.saving.trust import TrustVerdict
from core.structured import Answer, parse_answer, strict_problems, strict_schema
from core.tools.registry import TOOL_SPECS


def _every_answer_kind() -> tuple[type[Answer], ...]:
    """Every memory-model answer core defines, found by importing core: a new call is checked unnamed."""
    for module in pkgutil.walk_packages(core.__path__, "core."):
        importlib.import_module(module.name)
    kinds: list[type[Answer]] = []
    waiting = list(Answer.__subclasses__())
    while waiting:
        kind = waiting.pop()
        waiting.extend(kind.__subclasses__())
        if "purpose" in kind.__dict__:
            kinds.append(kind)
    return tuple(sorted(kinds, key=lambda k: k.__name__))


ANSWERS = _every_answer_kind()


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda a: a.__name__)
def test_every_memory_model_schema_meets_openais_strict_rules(answer: type[Answer]) -> None:
    assert strict_problems(strict_schema(answer)) == []


@pytest.mark.parametrize("spec", TOOL_SPECS, ids=lambda s: s.name)
def test_every_tool_schema_meets_openais_strict_rules(spec) -> None:  # type: ignore[no-untyped-def]
    assert strict_problems(dict(spec.parameters)) == []


def test_the_checker_finds_what_strict_mode_refuses() -> None:
    loose = {"type": "object", "properties": {"a": {"type": "string", "default": "x"}, "b": {"$ref": "#/x"}},
             "required": ["a"]}
    assert strict_problems(loose) == ["$: additionalProperties must be false", "$: every property must be required",
                                      "$.a: default is not allowed", "$.b: $ref is not allowed"]


def test_names_are_the_purposes_of_design_md() -> None:
    assert {a.purpose for a in ANSWERS} >= {"evidence_selection", "reply_check", "memory_learn", "trust_check",
                                            "reflect", "digest", "skill_rewrite", "writing_style"}


def test_reflect_demands_the_sensitive_flag_the_server_requires() -> None:
    add = strict_schema(Reflection)["properties"]["operations"]["items"]["anyOf"][0]
    assert add["properties"]["sensitive"] == {"type": "boolean"} and "sensitive" in add["required"]
    quote = {"message_ids": [1], "quote": "q", "path": "about/x", "text": "x", "kind": None}
    parsed = parse_answer(Reflection, {"operations": [{"op": "add", **quote}, {"op": "add", "sensitive": False, **quote}]})
    assert parsed.dropped == 1 and len(parsed.operations) == 1  # the add without the flag is invalid


def test_a_guardrail_reads_exact_json_types() -> None:
    assert parse_answer(TrustVerdict, {"allowed": True}).allowed is True
    for sloppy in ("yes", "true", 1):
        with pytest.raises(UnreadableAnswer):
            parse_answer(TrustVerdict, {"allowed": sloppy})
