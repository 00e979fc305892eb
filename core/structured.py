"""One definition per structured exchange with a model: the schema sent and the check of what comes back.

Every agent tool's arguments and every memory-model answer is a pydantic model (no I/O, so
the core may use it); ``strict_schema`` turns it into the strict JSON Schema OpenAI demands,
which the other servers read too. Validation is lenient where the server's own rules decide
item by item: an ``Answer`` drops a malformed item rather than the whole answer. The strict
form, rule by rule: docs/turn.md (Structured answers).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, ClassVar, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema

from core.errors import InvalidInput, UnreadableAnswer

M = TypeVar("M", bound=BaseModel)
_DROP = ("title", "default", "examples")


def _resolve(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            return _resolve(copy.deepcopy(defs[name]), defs)
        return {k: _resolve(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_resolve(v, defs) for v in node]
    return node


def _nullable(options: list[Any]) -> Any:
    """``anyOf: [X, null]`` as ``X`` with ``null`` added to its type, the form every server reads."""
    others = [o for o in options if o != {"type": "null"}]
    if len(others) == 1 and len(options) == 2 and isinstance(others[0].get("type"), str):
        merged = dict(others[0])
        merged["type"] = [merged["type"], "null"]
        if "enum" in merged:
            merged["enum"] = [*merged["enum"], None]
        return merged
    return {"anyOf": options}


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: _strict(v) for k, v in node.items() if k not in _DROP}
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
        node.pop("discriminator", None)
    if "anyOf" in node:
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        node = {**_nullable(node["anyOf"]), **rest}
    if node.get("type") == "object" or "properties" in node:
        node.pop("description", None)  # a class docstring speaks to Nod's readers, not to the model
        properties = node.get("properties", {})
        node["required"] = list(properties)
        node["additionalProperties"] = False
    return node


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema in OpenAI's strict form (docs/turn.md, Structured answers)."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    schema = _strict(_resolve(raw, raw.get("$defs", {})))
    assert isinstance(schema, dict)
    return schema


FORBIDDEN_KEYWORDS = frozenset({"$ref", "$defs", "allOf", "oneOf", "not", "if", "then", "else", "const",
                                "default", "title", "patternProperties", "dependentRequired", "dependentSchemas"})


def strict_problems(schema: Any, where: str = "$") -> list[str]:
    """Every place ``schema`` breaks OpenAI's strict rules; empty when it is strict-ready."""
    found: list[str] = []
    if isinstance(schema, list):
        for n, item in enumerate(schema):
            found += strict_problems(item, f"{where}[{n}]")
        return found
    if not isinstance(schema, dict):
        return found
    found += [f"{where}: {key} is not allowed" for key in FORBIDDEN_KEYWORDS & set(schema)]
    one_per_action = "anyOf" in schema and "properties" not in schema  # a multi-action tool: each branch is checked
    if (schema.get("type") == "object" or "properties" in schema) and not one_per_action:
        if schema.get("additionalProperties") is not False:
            found.append(f"{where}: additionalProperties must be false")
        if sorted(schema.get("required", [])) != sorted(schema.get("properties", {})):
            found.append(f"{where}: every property must be required")
    for key, value in schema.items():
        if key == "properties":
            for name, sub in value.items():
                found += strict_problems(sub, f"{where}.{name}")
        elif isinstance(value, (dict, list)):
            found += strict_problems(value, f"{where}.{key}")
    return found


def _sentence(error: ValidationError, what: str) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"] if not isinstance(part, int)) or "the arguments"
    if first["type"] == "extra_forbidden":
        return f"{what} has no argument `{where}`."
    if first["type"] == "missing":
        return f"{what} needs `{where}`."
    return f"{what}: `{where}` {first['msg'].lower().rstrip('.')}."


class Arguments(BaseModel):
    """A tool's arguments: unknown ones are refused, missing optional ones are None."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True, strict=True)


def parse_arguments(model: type[M], raw: Any, tool: str) -> M:
    """The model's arguments as ``model``; InvalidInput with a sentence the model can act on."""
    if not isinstance(raw, dict):
        raise InvalidInput(f"{tool} takes a JSON object of arguments.")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise InvalidInput(_sentence(exc, tool)) from exc


class Answer(BaseModel):
    """A memory-model answer named by its purpose (the json_schema name, DESIGN.md).

    Strict types: a JSON ``"yes"`` is not ``true`` and ``"12"`` is not a message id — what a
    guardrail reads must be exactly what the schema asked for.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
    purpose: ClassVar[str]
    # the call's max_tokens, before NOD_MAX_TOKENS_SCALE: what the largest legitimate answer needs,
    # with room to spare, so a runaway model stops there (docs/turn.md, Budgets)
    max_tokens: ClassVar[int]
    KINDS: ClassVar[dict[str, type[Answer]]] = {}  # every answer kind by purpose: made by defining the class

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "purpose" in cls.__dict__:
            Answer.KINDS[cls.purpose] = cls
    ITEM_LISTS: ClassVar[tuple[str, ...]] = ()  # lists whose malformed items are dropped, not fatal
    dropped: SkipJsonSchema[int] = 0

    @model_validator(mode="before")
    @classmethod
    def _drop_malformed_items(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not cls.ITEM_LISTS:
            return data
        data = dict(data)
        dropped = 0
        for name in cls.ITEM_LISTS:
            items = data.get(name)
            if not isinstance(items, list):
                continue
            (item_type,) = get_args(cls.model_fields[name].annotation)
            adapter: TypeAdapter[Any] = TypeAdapter(item_type)
            kept = []
            for item in items:
                try:
                    kept.append(adapter.validate_python(item))
                except ValidationError:
                    dropped += 1
            data[name] = kept
        data["dropped"] = dropped
        return data


_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.S)


def _first_object(text: str) -> str | None:
    """The first balanced {...} in ``text`` (strings and escapes respected), or None."""
    start = text.find("{")
    while start != -1:
        depth, inside, escaped = 0, False, False
        for end in range(start, len(text)):
            char = text[end]
            if inside:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    inside = False
                continue
            if char == '"':
                inside = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return text[start:end + 1]
        start = text.find("{", start + 1)
    return None


def json_object_in(text: str) -> dict[str, Any]:
    """The JSON object a model answered with: bare, in a fence of any case, or amid prose.

    Servers in json_object mode and models without structured output wrap it variously
    (```JSON, a sentence before it); the first balanced object is taken, then validated by
    the answer's model — so an odd wrapping costs nothing, and odd content is refused.
    """
    body = text.strip()
    candidates = [body, *(m.group(1).strip() for m in _FENCE.finditer(body))]
    found = _first_object(body)
    if found is not None:
        candidates.append(found)
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise UnreadableAnswer("The memory model's answer was not a JSON object.")


def parse_answer(model: type[M], raw: Any) -> M:
    """A decoded answer as ``model``; UnreadableAnswer when its shape is not the schema's."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise UnreadableAnswer(f"The memory model's answer did not match the {getattr(model, 'purpose', 'answer')} schema.") from exc
