"""The checks the real API makes of a JSON Schema (a function's parameters, a `json_schema` format): its 400s."""

from __future__ import annotations

from typing import Any


def schema_error(schema: Any, *, strict: bool, require_object: bool) -> str | None:
    """Why the API would reject `schema` ("In context=(...), ..."), or None when it is acceptable. jsonschema is
    imported by the first schema to check, not at start-up: with referencing and attrs, ~0.15 s and ~8 MB."""
    from jsonschema import Draft202012Validator, SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"In context={tuple(exc.path)!r}, {exc.message}."
    cycle = _ref_cycle(schema)
    if cycle:
        return cycle
    if require_object and schema.get("type") != "object":
        return f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{schema.get('type')}\"'."
    if strict:
        return _strict_error(schema, ())
    return None


def _strict_error(node: Any, context: tuple[str, ...]) -> str | None:
    """Structured Outputs' strict rules: closed objects whose properties are all required."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            found = _strict_error(item, (*context, str(i)))
            if found:
                return found
        return None
    if not isinstance(node, dict):
        return None
    if node.get("type") == "object" or "properties" in node:
        if node.get("additionalProperties") is not False:
            return (f"In context={context!r}, 'additionalProperties' is required to be supplied and to be "
                    "false.")
        missing = [p for p in node.get("properties", {}) if p not in node.get("required", [])]
        if missing:
            return (f"In context={context!r}, 'required' is required to be supplied and to be an array "
                    f"including every key in properties. Missing '{missing[0]}'.")
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions"):
            for name, sub in value.items():
                found = _strict_error(sub, (*context, key, name))
                if found:
                    return found
        elif key in ("items", "anyOf", "allOf", "oneOf", "prefixItems", "additionalProperties", "not"):
            found = _strict_error(value, (*context, key))
            if found:
                return found
    return None


def _ref_cycle(schema: Any) -> str | None:
    """A `$ref` that leads, through `$ref`s alone, back to itself: no value can ever be made of it."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(schema, ())]
    seen: set[int] = set()
    while stack:
        node, context = stack.pop()
        if isinstance(node, list):
            stack.extend((item, (*context, str(i))) for i, item in enumerate(node))
            continue
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        chain, target = {id(node)}, node
        while isinstance(target, dict) and isinstance(target.get("$ref"), str):
            target = pointer(schema, target["$ref"])
            if id(target) in chain:
                return f"In context={context!r}, '$ref' leads back to itself through references alone."
            chain.add(id(target))
        stack.extend((value, (*context, key)) for key, value in node.items())
    return None


def pointer(root: Any, ref: str) -> Any:
    """What a local `$ref` points at in `root`."""
    node: Any = root
    for part in filter(None, ref.partition("#")[2].split("/")):
        if not isinstance(node, dict) or part.replace("~1", "/").replace("~0", "~") not in node:
            return {}  # a remote or dangling $ref: anything goes
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node
