"""LLMSim's own endpoints: /llmsim/health (open) and /llmsim/admin (the admin key, when set, guards it; writes
take JSON only; an API key as admin credential sees only its own requests)."""

from __future__ import annotations

import time
from typing import Any

from flask import Blueprint, current_app, jsonify, request
from flask.typing import ResponseReturnValue

from llmsim.api.chaos import state
from llmsim.api.http import int_arg, json_body, owner, require_admin_key, services
from llmsim.chaos.rules import FaultConfig
from llmsim.chaos.state import RECENT
from llmsim.errors import APIError
from llmsim.responses import schema

JSON_TYPES = ("application/json",)
READS = ("GET", "HEAD", "OPTIONS")


def json_writes(*also: str) -> None:
    """Guard for state-changing admin and dashboard routes: a body only as JSON (or one of `also`), never
    text/plain or a form, which any web page can send across origins with no preflight."""
    if request.method in READS:
        return
    mimetype = request.mimetype
    has_body = bool(request.content_length) or "chunked" in request.headers.get("Transfer-Encoding", "").lower()
    if mimetype in (*JSON_TYPES, *also) or mimetype.endswith("+json") or not mimetype and not has_body:
        return
    raise APIError(f"Invalid Content-Type header ({request.content_type or 'none'}), expected application/json.",
                   status=415, code="unsupported_content_type")


def sees_all() -> bool:
    """Whether this admin credential sees every API key's requests: the admin key does, and so does anyone on a
    server without API keys. An API key that is the admin credential (no --admin-key) sees only its own."""
    settings = services().settings
    return bool(settings.admin_key) or not settings.api_keys


def visible_requests(limit: int) -> list[dict[str, Any]]:
    """The latest `limit` request log entries this admin credential may see, without the scope they carry."""
    if sees_all():
        entries = state().recent(limit)
    else:
        mine = owner()
        entries = [entry for entry in state().recent(RECENT) if entry.get("owner") == mine][-limit:]
    return [{k: v for k, v in entry.items() if k != "owner"} for entry in entries]


bp = Blueprint("admin", __name__, url_prefix="/llmsim/admin")
bp.before_request(require_admin_key)
bp.before_request(json_writes)
health_bp = Blueprint("health", __name__, url_prefix="/llmsim")
PAUSED = "llmsim.paused_faults"  # app extension: the config in force before a pause


@health_bp.get("/health")
def health() -> ResponseReturnValue:
    """ok; a 503 while a shared store (Redis) cannot be reached, or the SQLite file cannot be written (full,
    read-only, locked: `storage_unavailable` with the cause), so a load balancer routes around it. With SQLite,
    its disk's space too: `degraded` under --store-min-free (still a 200: writes still succeed), and a 503 once
    a write failed for space, though the probe's small write may still fit."""
    store = services().pipeline.store
    for probe in (getattr(store, "ping", None), getattr(store, "check", None)):
        if probe is not None:
            probe()
    space = getattr(store, "space", None)
    if space is None:
        return jsonify({"status": "ok"})
    disk = space()
    failed = disk["write_failed_for_space_at"]
    if failed is not None:
        error = APIError(f"The response store is unavailable: disk full (a write failed for space "
                         f"{time.time() - failed:.0f} s ago; {disk['free_bytes']} bytes free).", status=503,
                         type="server_error", code="storage_unavailable")
        return jsonify({"status": "degraded", "storage": disk, **error.body()}), 503, {"retry-after": "1"}
    return jsonify({"status": "degraded" if disk["low_space"] else "ok", "storage": disk})


def _config() -> ResponseReturnValue:
    return jsonify(state().config.model_dump(mode="json", exclude_none=True))


@bp.get("/faults")
def get_faults() -> ResponseReturnValue:
    return _config()


@bp.put("/faults")
def set_faults() -> ResponseReturnValue:
    """Replace the whole fault config (rules and rate limits); schedules start again from the first request."""
    state().configure(schema.parse(FaultConfig, json_body()))
    current_app.extensions.pop(PAUSED, None)  # the new rules are in force
    return _config()


def paused_rules() -> FaultConfig | None:
    """The config whose rules a pause put aside, or None when faults are not paused."""
    return current_app.extensions.get(PAUSED)


@bp.post("/faults/pause")
def pause() -> ResponseReturnValue:
    """Stop the rules firing (rate limits and the X-LLMSim-Fault header still apply) until resumed."""
    chaos = state()
    if paused_rules() is None:
        current_app.extensions[PAUSED] = config = chaos.config
        chaos.configure(config.model_copy(update={"faults": []}))
    return jsonify({"paused": True})


@bp.post("/faults/resume")
def resume() -> ResponseReturnValue:
    """The paused rules again, their schedules from the start."""
    paused = current_app.extensions.pop(PAUSED, None)
    if paused is not None:
        chaos = state()
        chaos.configure(paused.model_copy(update={"rate_limits": chaos.config.rate_limits}))
    return jsonify({"paused": False})


@bp.post("/faults/reset")
def reset() -> ResponseReturnValue:
    """Counters, schedules, seeded sequences, rate-limit buckets and the request log back to their start."""
    state().reset()
    return jsonify({"reset": True})


@bp.get("/faults/counters")
def counters() -> ResponseReturnValue:
    return jsonify(state().counters())


@bp.get("/requests")
def recent_requests() -> ResponseReturnValue:
    """The latest generating requests, oldest first, each with the fault applied to it (or null)."""
    limit = int_arg("limit", 100, low=1, high=1000)
    data = visible_requests(limit) if limit else []
    return jsonify({"object": "list", "data": data})
