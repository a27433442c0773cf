"""/llmsim/ui: the live dashboard, a static page (llmsim/api/ui/) polling one JSON state, guarded by the admin key.

The figures come from the metrics, merged across workers like a scrape; the request log, fault rules and
scenario are the admin API's. The page's own files carry no data and load without the key; the page asks for
the key when the state answers 401 and sends it as a bearer token, like any admin client.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, send_from_directory
from flask.typing import ResponseReturnValue

from llmsim.api.admin import json_writes, paused_rules, sees_all, visible_requests
from llmsim.api.chaos import state as chaos_state
from llmsim.api.http import owner, require_admin_key, services
from llmsim.api.metrics import EXTENSION, metrics, update_gauges
from llmsim.errors import not_found
from llmsim.metrics.history import History
from llmsim.metrics.registry import histogram
from llmsim.timing.profiles import Profile

UI_DIR = Path(__file__).resolve().parent / "ui"
RECENT = 40  # rows in the page's table
MAX_EVENTS = 2000  # events of one response sent to the page

bp = Blueprint("dashboard", __name__, url_prefix="/llmsim/ui")
api = Blueprint("dashboard_api", __name__, url_prefix="/llmsim/ui/api")
api.before_request(require_admin_key)
api.before_request(json_writes)
# The page is its own files only (inline style attributes aside: no script can come from those), and no other
# site may frame it: a framed dashboard could be clicked through by the page around it.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self' data:; "
                               "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@bp.after_request
@api.after_request
def _secured(response: Response) -> Response:
    response.headers.update(SECURITY_HEADERS)
    return response
HISTORY = "llmsim.history"
bp.record_once(lambda setup: setup.app.extensions.setdefault(
    HISTORY, History(setup.app.extensions[EXTENSION]).start()))  # the charts' last 15 minutes, kept by the server


@bp.get("")
@bp.get("/")
def page() -> ResponseReturnValue:
    return send_from_directory(UI_DIR, "index.html", max_age=0)


@bp.get("/<path:name>")
def asset(name: str) -> ResponseReturnValue:
    return send_from_directory(UI_DIR, name, max_age=0)


@api.get("/state")
def dashboard_state() -> ResponseReturnValue:
    update_gauges(scraping=True)
    samples = metrics().samples()
    chaos = chaos_state()
    config = chaos.config
    paused = paused_rules()
    return jsonify({
        "time": time.time(),
        "models": _models(samples),
        "requests": [{"endpoint": labels["endpoint"], "status": labels["status"], "count": value}
                     for labels, value in samples.get("llmsim_requests_total", [])],
        "faults": {kind: n for kind, n in _by(samples, "llmsim_faults_injected_total", "kind").items() if n},
        "rate_limited": sum(v for _, v in samples.get("llmsim_rate_limited_total", [])),
        "store_entries": _by(samples, "llmsim_store_entries", "kind"),
        "background_queue": sum(v for _, v in samples.get("llmsim_background_queue", [])),
        "recent": visible_requests(RECENT),
        "fault_rules": [rule.model_dump(mode="json", exclude_none=True) for rule in
                        (paused.faults if paused is not None else config.faults)],
        "rate_limits": config.rate_limits.model_dump(mode="json", exclude_none=True),
        "paused": paused is not None,
        "scenario": _scenario(),
    })


@api.get("/history")
def history() -> ResponseReturnValue:
    """The charts' points of the last 15 minutes (llmsim/metrics/history.py), for the page to start with."""
    return jsonify({"window_s": current_app.extensions[HISTORY].window,
                    "points": current_app.extensions[HISTORY].points()})


@api.get("/responses/<response_id>")
def stored(response_id: str) -> ResponseReturnValue:
    """A stored response and its events, for the table's click-through."""
    record = services().pipeline.store.get(response_id)
    if record is None or not sees_all() and record.owner != owner():  # an API key as admin sees only its own
        raise not_found("Response", response_id)
    events = record.stream_events()
    return jsonify({"response": record.response,
                    "events": [{"type": kind, "data": data} for kind, data in events[:MAX_EVENTS]],
                    "events_total": len(events)})


def _models(samples: dict[str, list[tuple[dict[str, str], float]]]) -> list[dict[str, Any]]:
    names = sorted({labels["model_name"] for name, series in samples.items() for labels, value in series
                    if "model_name" in labels and (value or not name.startswith("vllm:num_requests_"))})
    # (a listed model's live gauges are there at 0 from the start: idle, it is not shown)
    catalog = services().catalog
    return [{
        "name": name,
        "running": _sum(samples, "vllm:num_requests_running", name),
        "waiting": _sum(samples, "vllm:num_requests_waiting", name),
        "finished": _sum(samples, "vllm:request_success_total", name),
        "aborted": sum(v for labels, v in samples.get("vllm:request_success_total", [])
                       if labels.get("model_name") == name and labels.get("finished_reason") == "abort"),
        "prompt_tokens": _sum(samples, "vllm:prompt_tokens_total", name),
        "generation_tokens": _sum(samples, "vllm:generation_tokens_total", name),
        "reasoning_tokens": _sum(samples, "llmsim_reasoning_tokens_total", name),
        "cost_usd": _sum(samples, "llmsim_cost_usd_total", name),
        "ttft": histogram(samples, "vllm:time_to_first_token_seconds", model_name=name),
        "itl": histogram(samples, "vllm:inter_token_latency_seconds", model_name=name),
        "profile": _profile(catalog.get(name) or catalog.default),
    } for name in names]


def _profile(profile: Profile) -> dict[str, float] | None:
    """The configured p50/p95 the measured distributions are shown against (TTFT for an empty prompt)."""
    timing = profile.timing
    if timing is None:
        return None
    return {"ttft_p50": timing.ttft_ms.quantile(0.5) / 1000, "ttft_p95": timing.ttft_ms.quantile(0.95) / 1000,
            "itl_p50": timing.itl_ms.quantile(0.5) / 1000, "itl_p95": timing.itl_ms.quantile(0.95) / 1000}


def _sum(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, model: str) -> float:
    return sum(v for labels, v in samples.get(name, []) if labels.get("model_name") == model)


def _by(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, label: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, value in samples.get(name, []):
        out[labels[label]] = out.get(labels[label], 0.0) + value
    return out


def _scenario() -> dict[str, Any] | None:
    """The loaded scenario, where it stands, and what the next request gets from it (rules may come first)."""
    player = services().pipeline.gate.scenarios
    current = player.state()
    scenario = current["scenario"]
    if scenario is None:
        return None
    turns = scenario.get("turns", [])
    position = current["position"]
    if position < len(turns):
        upcoming: Any = {"step": f"turns[{position}]", **turns[position]}
    elif turns and scenario.get("on_exhausted") in ("repeat_last", "cycle"):
        index = len(turns) - 1 if scenario["on_exhausted"] == "repeat_last" else 0
        upcoming = {"step": f"turns[{index}]", **turns[index]}
    else:
        upcoming = {"step": scenario.get("on_exhausted", "simulate")}
    return {"name": scenario.get("name"), "requests": current["requests"], "position": position,
            "turns": len(turns), "rules": len(scenario.get("rules", [])), "next": upcoming}
