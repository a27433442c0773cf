"""GET /metrics (Prometheus text format), and the hook that counts every API request once it is answered
(llmsim/metrics/answers.py).

Every API request is counted by endpoint and status once it is answered; admission counts the fault or rate limit
it gave, and measures each admitted request with its Meter (llmsim/metrics/meter.py `Measured`).
"""

from __future__ import annotations

import functools

from flask import Blueprint, Flask, Response, current_app, request
from prometheus_client import CONTENT_TYPE_LATEST

from llmsim.api import which
from llmsim.api.http import services
from llmsim.metrics.answers import answered, store_gauges
from llmsim.metrics.registry import Metrics
from llmsim.pipeline import Pipeline

EXTENSION = "llmsim.metrics"
PATH = "/metrics"
bp = Blueprint("metrics", __name__)


def metrics() -> Metrics:
    return current_app.extensions[EXTENSION]


@bp.get(PATH)
def scrape() -> Response:
    update_gauges(scraping=True)
    return Response(metrics().exposition(), content_type=CONTENT_TYPE_LATEST)


def update_gauges(scraping: bool = False) -> None:
    store_gauges(metrics(), services().pipeline, scraping)


def _endpoint() -> str | None:
    """The route without its mount prefix (`/responses/<response_id>`), or None for what is not the API."""
    rule = request.url_rule.rule if request.url_rule is not None else None
    if rule is None:
        return "unknown"
    if rule == PATH or rule.startswith("/llmsim/"):
        return None
    return which.surface().metrics_label(rule)


def install(app: Flask, found: Metrics, pipeline: Pipeline) -> None:
    app.extensions[EXTENSION] = found
    found.declare(profile.id for profile in pipeline.catalog.listed())  # their live gauges at 0 from the start
    found.refresh = functools.partial(store_gauges, found, pipeline)  # after each generation: it may have stored one
    app.register_blueprint(bp)

    @app.after_request
    def _count(response: Response) -> Response:
        endpoint = _endpoint()
        if endpoint is not None:
            answered(found, pipeline, endpoint, response.status_code, gauges=request.method != "GET")
        return response

