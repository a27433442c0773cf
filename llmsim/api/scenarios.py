"""/llmsim/admin/scenarios: load, inspect, rewind and unload the scripted scenario at run time.

A scenario is sent as JSON, or as YAML with a YAML content type (never text/plain, which any web page may
send). Mounted once (not under the API prefixes); the admin key guards it when one is set.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request
from flask.typing import ResponseReturnValue

from llmsim.api.admin import json_writes, sees_all
from llmsim.api.http import body_bytes, int_arg, json_body, owner, require_admin_key, services
from llmsim.chaos import scenarios
from llmsim.errors import APIError

bp = Blueprint("scenarios", __name__, url_prefix="/llmsim/admin/scenarios")
bp.before_request(require_admin_key)
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")  # never text/plain
bp.before_request(lambda: json_writes(*YAML_TYPES))


def _player() -> scenarios.Player:
    return services().pipeline.gate.scenarios


@bp.put("")
@bp.post("")
def load() -> ResponseReturnValue:
    """Replace the scenario; it plays from its first turn."""
    try:
        if request.mimetype in YAML_TYPES:
            scenario = scenarios.parse_text(body_bytes().decode("utf-8", "replace"), "scenario")
        else:
            scenario = scenarios.parse(json_body(), "scenario")
    except scenarios.ScenarioError as exc:
        raise APIError(str(exc), param="scenario", code="invalid_scenario") from None
    _player().load(scenario)
    return jsonify(_player().state())


@bp.get("")
def current() -> ResponseReturnValue:
    return jsonify(_player().state())


@bp.delete("")
def unload() -> ResponseReturnValue:
    _player().load(None)
    return jsonify(_player().state())


@bp.post("/reset")
def reset() -> ResponseReturnValue:
    """Back to the first turn, rule counts and transcript cleared."""
    _player().reset()
    return jsonify(_player().state())


@bp.get("/transcript")
def transcript() -> ResponseReturnValue:
    """The requests received since the last load or reset, oldest first, each with the step that answered it
    (`rules[i]`, `turns[i]`, or null when the simulator did) and its owner (its API key's scope). An API key
    sees its own; the admin key (or anyone, on a server without keys) sees all, but a `store: false` body only
    its owner sees (`request` is null to the others)."""
    limit = int_arg("limit", scenarios.TRANSCRIPT, low=1, high=scenarios.TRANSCRIPT)
    mine = owner()
    if sees_all():
        entries = _player().recent(limit)
    else:
        entries = [e for e in _player().recent(scenarios.TRANSCRIPT) if e.get("owner", "") == mine][-limit:]
    return jsonify({"object": "list", "data": [_shown(entry, mine) for entry in entries]})


def _shown(entry: dict[str, Any], viewer: str) -> dict[str, Any]:
    request = entry.get("request")
    unstored = isinstance(request, dict) and request.get("store") is False
    return {**entry, "request": None} if unstored and entry.get("owner", "") != viewer else entry
