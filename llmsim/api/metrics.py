"""GET /metrics (Prometheus text format), and the per-request counts only the HTTP edge knows.

Every API request is counted by endpoint and status once it is answered, with the fault or rate limit the
chaos gate gave it; generating requests are measured further by their Meter (llmsim/metrics/meter.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import CONTENT_TYPE_LATEST

from llmsim.api.http import services
from llmsim.chaos.faults import Admission
from llmsim.generation import Prompt
from llmsim.metrics.meter import Meter
from llmsim.metrics.registry import Metrics
from llmsim.pipeline import Pipeline

EXTENSION = "llmsim.metrics"
PATH = "/metrics"
bp = Blueprint("metrics", __name__)


def metrics() -> Metrics:
    return current_app.extensions[EXTENSION]


def metered(prompt: Prompt, stream: bool, admit: Callable[[], Admission]) -> Admission:
    """`admit()` (the chaos gate's checks), counting the fault or rate limit it gave, and a Meter on the
    admitted request, timed from before the checks (an injected hang is part of its wait)."""
    started = time.perf_counter()
    found = metrics()
    g.pop("llmsim_request", None)  # a WebSocket connection admits many: count only this one's entry
    try:
        admission = admit()
    finally:
        entry = g.get("llmsim_request")
        if entry is not None and entry.get("fault"):
            found.faults.labels(entry["fault"]).inc()
        if entry is not None and entry.get("rate_limited"):
            found.rate_limited.inc()
    admission.meter = Meter(found, prompt.profile.id, stream=stream, input_tokens=prompt.input_tokens,
                            pricing=prompt.profile.pricing, entry=entry, started=started)
    return admission


@bp.get(PATH)
def scrape() -> Response:
    update_gauges(scraping=True)
    return Response(metrics().exposition(), content_type=CONTENT_TYPE_LATEST)


def update_gauges(scraping: bool = False) -> None:
    store_gauges(metrics(), services().pipeline, scraping)


def store_gauges(found: Metrics, pipeline: Pipeline, scraping: bool = False) -> None:
    """This process's store sizes (a gauge is written by the process that knows it). A fleet's store (Redis)
    is counted when scraped only: counting it costs round trips, and no request should fail for a gauge."""
    if not scraping and getattr(pipeline.store, "shared", False):
        return
    found.set_store_sizes(len(pipeline.store), len(pipeline.conversations), force=scraping)


def _endpoint() -> str | None:
    """The route without its mount prefix (`/responses/<response_id>`), or None for what is not the API."""
    rule = request.url_rule.rule if request.url_rule is not None else None
    if rule is None:
        return "unknown"
    if rule == PATH or rule.startswith("/llmsim/"):
        return None
    for prefix in ("/openai/v1", "/v1", "/v3"):
        if rule.startswith(prefix + "/"):
            return rule[len(prefix):]
    return rule


def install(app: Flask, found: Metrics, pipeline: Pipeline) -> None:
    app.extensions[EXTENSION] = found
    found.refresh = lambda: store_gauges(found, pipeline)  # after each generation: it may have stored one
    app.register_blueprint(bp)

    @app.after_request
    def _count(response: Response) -> Response:
        endpoint = _endpoint()
        if endpoint is not None:
            answered(found, pipeline, endpoint, response.status_code, gauges=request.method != "GET")
        return response


def answered(found: Metrics, pipeline: Pipeline, endpoint: str, status: int, gauges: bool) -> None:
    """An API request answered: counted by endpoint and status. `gauges`: it may have stored something, so the
    store gauges are brought up to date."""
    found.answered(endpoint, status)
    if gauges:
        store_gauges(found, pipeline)
