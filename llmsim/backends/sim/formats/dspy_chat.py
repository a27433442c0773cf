"""dspy's ChatAdapter: every output field under its `[[ ## name ## ]]` header, typed as the prompt declares
it, then `[[ ## completed ## ]]`."""

from __future__ import annotations

import json
from typing import Any

from llmsim.backends.sim.formats import dspy_fields
from llmsim.backends.sim.formats.request import Request

MARKER = "[[ ## completed ## ]]"


def respond(req: Request) -> str | None:
    if req.text_format != "text" or MARKER not in req.instructions:
        return None
    fields = dspy_fields.declared(req.instructions)
    if fields is None:
        return None
    filled = dspy_fields.fill(req, fields)
    blocks = [f"[[ ## {name} ## ]]\n{_render(value)}" for name, value in filled.items()]
    return "\n\n".join([*blocks, MARKER])


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value)
    return json.dumps(value, ensure_ascii=False)
