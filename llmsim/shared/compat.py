"""Forward compatibility: what a request may say that LLMSim does not know yet, and what it may never say.

The live API changes faster than any simulator, and a false 400 stops a user dead where a missed 400 only weakens
a test. So by default an unknown parameter, an unknown field of a known item or content part, and an unknown value
of a known enum are accepted (dropped: the default applies) and reported: the `x-llmsim-warnings` header, the
request log (and the dashboard), the pytest handle's `llmsim.warnings`. `--strict-params` (or the
`X-LLMSim-Strict-Params: true` header) gives the live API's 400 for them instead.

Each surface says which names are known to be wrong on it (its `refused`, llmsim/surface.py): another API's
parameters, which a client sends by mistake, and parameters the live API has removed. They get the live API's 400
always (docs/compatibility.md lists them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_core import ErrorDetails

WARNINGS_HEADER = "x-llmsim-warnings"
STRICT_HEADER = "X-LLMSim-Strict-Params"
MAX_WARNINGS = 20  # per request: bounded, whatever a body holds
MAX_FORGIVEN = 64  # fields dropped from one body before it is refused as it stands

_VALUE_ERRORS = frozenset({"literal_error", "enum"})
_MISSING = object()


def forgive(body: dict[str, Any], error: ErrorDetails, refused: frozenset[str] | Mapping[str, str]) -> str | None:
    """Drop from `body` (in place) what `error` is about, if it is an unknown name or enum value, and say so; None
    when the error stands (a wrong type, a missing field, an unknown item type, a refused name)."""
    kind, loc = error["type"], error["loc"]
    if kind == "extra_forbidden":
        if len(loc) == 1 and loc[0] in refused:
            return None
        path = _locate(body, loc, lambda path, _: path[-1] == loc[-1])
        what = "unknown parameter"
    elif kind in _VALUE_ERRORS and isinstance(error.get("input"), str):
        path = _locate(body, loc, lambda _, node: node == error["input"])
        what = f"unknown value '{error['input']}' of"
    else:
        return None
    if not path:
        return None
    parent: Any = body
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    return f"{what} '{_named(path)}'"


def _locate(body: Any, loc: tuple[Any, ...], found: Any) -> list[Any] | None:
    """The keys into `body` that pydantic's `loc` names, its union branches' names skipped (a branch's name may
    also be a key: both readings are tried)."""

    def walk(node: Any, i: int, path: list[Any]) -> list[Any] | None:
        if i == len(loc):
            return path if path and found(path, node) else None
        part = loc[i]
        child: Any = _MISSING
        if isinstance(node, dict) and isinstance(part, str):
            child = node.get(part, _MISSING)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            child = node[part]
        if child is not _MISSING:
            deeper = walk(child, i + 1, [*path, part])
            if deeper is not None:
                return deeper
        return walk(node, i + 1, path)

    return walk(body, 0, [])


def _named(path: list[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def headers(warnings: list[str]) -> dict[str, str]:
    """The warnings as one header line (ASCII, bounded); none when there are none."""
    if not warnings:
        return {}
    text = "; ".join(warnings[:MAX_WARNINGS])
    return {WARNINGS_HEADER: text.encode("ascii", "backslashreplace").decode()[:4000]}
