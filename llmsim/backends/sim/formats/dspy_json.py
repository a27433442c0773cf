"""dspy's JSONAdapter: one JSON object of the output fields, typed as the prompt declares them; under a
`json_schema` response format (the adapter's first try) the object must also fit that schema."""

from __future__ import annotations

from llmsim.backends.sim import jsongen
from llmsim.backends.sim.formats import dspy_fields, values
from llmsim.backends.sim.formats.request import Request

MARKER = "Outputs will be a JSON object with the following fields"


def respond(req: Request) -> str | None:
    if MARKER not in req.instructions:
        return None
    fields = dspy_fields.declared(req.instructions)
    if fields is None:
        return None
    filled = dspy_fields.fill(req, fields)
    fmt = req.prompt.text_format
    if fmt.get("type") == "json_schema" and not values.valid(filled, fmt.get("schema")):
        filled = jsongen.generate(fmt["schema"], req.rng, req.fake, {**req.hints, **{
            k: v for k, v in filled.items() if isinstance(v, str)}})
    return values.dumps(filled)
