"""The application factory: settings in, a Flask app with every endpoint mounted out."""

from __future__ import annotations

import logging
import time
from typing import Protocol, runtime_checkable

from flask import Flask, Response, jsonify, request
from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import HTTPException

from llmsim.api import admin, chaos, dashboard, forward, guard, mount, stamp, writes
from llmsim.api import messages as messages_api
from llmsim.api import metrics as api_metrics
from llmsim.api import scenarios as scenarios_api
from llmsim.api.answers import settled
from llmsim.api.http import client_socket
from llmsim.api.url_rules import LazyBuildRule
from llmsim.backends import load_backend, load_models
from llmsim.chaos import scenarios
from llmsim.chaos.admission import Gate
from llmsim.chaos.rules import fault_config
from llmsim.chaos.state import ChaosState
from llmsim.config import Settings
from llmsim.errors import APIError, internal_error
from llmsim.metrics.meter import Measured
from llmsim.metrics.registry import Metrics
from llmsim.pipeline import Pipeline
from llmsim.responses.replay import Replay
from llmsim.runtime import waits
from llmsim.runtime.shutdown import ShuttingDown
from llmsim.services import Services
from llmsim.store import Stores, open_stores
from llmsim.store.base import StorageUnavailable
from llmsim.store.redis_client import unavailable_errors
from llmsim.timing.pacing import Pacer, QueueObserver

log = logging.getLogger("llmsim")
ARRIVED = "llmsim.arrived"  # the WSGI environ's key for the request's id and arrival time, for its headers


@runtime_checkable
class Queued(Protocol):
    """A backend with its own queue (mlx's, for decode slots), which it reports to the metrics."""

    def observe(self, observer: QueueObserver) -> None: ...


class _Flask(Flask):
    url_rule_class = LazyBuildRule

    def make_default_options_response(self) -> Response:
        """OPTIONS: 204 with the `Allow` header, no body (Flask's default is an empty 200 text/html)."""
        response = super().make_default_options_response()
        response.status_code = 204
        response.headers.remove("Content-Type")
        return response


def _store_unavailable(error: BaseException) -> Response:
    """Redis is away: a 503 the SDKs retry; the pool reconnects by itself once it is back."""
    log.warning("redis unavailable: %s", error)
    if messages_api.owns(request.path):  # Anthropic's envelope names the cause
        cause = APIError(f"The store is unavailable (Redis: {error}). Retry shortly.", status=503, type="api_error")
        return settled(_answer(cause, {"retry-after": "1"}, keep_status=True), error)
    body = APIError("The server is overloaded or not ready yet.", status=503, type="server_error").body()
    return settled(_json(body, 503, {"retry-after": "1"}), error)


def _storage_unavailable(error: StorageUnavailable) -> Response:
    """The store's disk is full, read-only or locked: a 503 saying so (the SDKs retry it), never a generic 500."""
    log.warning("storage unavailable: %s", error)
    answer = APIError(error.message, status=503, type="server_error", code="storage_unavailable")
    return settled(_answer(answer, {"retry-after": "1"}, keep_status=True), error)


def _shutting_down(error: ShuttingDown) -> Response:
    """Cut by a shutdown before its answer began (waiting for admission, say): a 503 to retry elsewhere."""
    answer = APIError(error.message, status=503, type="server_error", code=error.code)
    return settled(_answer(answer, {"retry-after": "1"}, keep_status=True), error)


def _answer(error: APIError, headers: dict[str, str] | None = None, keep_status: bool = False) -> Response:
    """`error` in the envelope of the API its path belongs to: Anthropic's under its prefixes, else OpenAI's."""
    if messages_api.owns(request.path):
        response = messages_api.error_response(error, error.status if keep_status else None)
        response.headers.update(headers or {})
        return response
    return _json(error.body(), error.status, {**error.headers, **(headers or {})})


def _json(body: object, status: int, headers: dict[str, str] | None = None) -> Response:
    response = jsonify(body)
    response.status_code = status
    response.headers.update(headers or {})
    return response


def create_app(settings: Settings | None = None) -> Flask:
    settings = settings or Settings()
    backend = load_backend(settings)
    catalog = load_models(backend, settings)
    stores = open_stores(settings.store, settings.store_max_entries, settings.store_ttl_seconds, Replay.load)
    scenario = scenarios.load(settings.scenario_file) if settings.scenario_file else None
    chaos_state, player = shared_state(stores, settings, scenario)
    metrics = Metrics(shared_store=settings.store != "memory")
    gate = Gate(chaos_state, player, Measured(metrics))
    pipeline = Pipeline(catalog, backend, stores.responses, seed=settings.seed,
                        pacer=Pacer(settings.speed, observer=metrics.queues), conversations=stores.conversations,
                        gate=gate, batch=stores.batch)
    pipeline.runner.on_queue = metrics.background_queue.inc
    if isinstance(backend, Queued):
        backend.observe(metrics.queues)

    app = _Flask("llmsim")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    assert isinstance(app.json, DefaultJSONProvider)
    app.json.sort_keys = False
    app.json.ensure_ascii = False
    app.extensions["llmsim"] = Services(settings, catalog, pipeline)

    @app.before_request
    def _start() -> None:  # first: every answer, a 401 from the key check included, has its request id
        request.environ[ARRIVED] = (stamp.request_id(), time.perf_counter())
        waits.watch(client_socket())

    mount(app)
    messages_api.mount(app)
    writes.install(app, stores.batch, _store_unavailable)
    chaos.install(app, chaos_state)
    api_metrics.install(app, metrics, pipeline)
    app.register_blueprint(admin.bp)
    app.register_blueprint(admin.health_bp)
    app.register_blueprint(scenarios_api.bp)
    app.register_blueprint(dashboard.bp)
    app.register_blueprint(dashboard.api)

    @app.after_request
    def _headers(response: Response) -> Response:
        stamp.stamp(response.headers, *request.environ.get(ARRIVED, ("", 0)))
        return response

    @app.errorhandler(APIError)
    def _api_error(error: APIError) -> Response:
        return settled(_answer(error), error)

    @app.errorhandler(HTTPException)
    def _http_error(error: HTTPException) -> Response:
        status = error.code or 500
        headers: dict[str, str] = {}
        if status == 404:
            message = f"Invalid URL ({request.method} {request.path})"
        elif status == 405:
            message = f"Method not allowed: {request.method} {request.path}"
            headers = {"Allow": ", ".join(sorted(getattr(error, "valid_methods", None) or []))}
        elif status == 413:
            message = f"Request body too large: the limit is {settings.max_body_bytes} bytes."
        else:
            message = error.description or error.name
        return _answer(APIError(message, status=status), headers, keep_status=True)

    for unavailable in unavailable_errors() if stores.redis is not None else ():
        app.register_error_handler(unavailable, _store_unavailable)
    app.register_error_handler(StorageUnavailable, _storage_unavailable)
    app.register_error_handler(ShuttingDown, _shutting_down)

    @app.errorhandler(Exception)
    def _unexpected(error: Exception) -> Response:
        log.exception("unhandled error")
        return settled(_answer(internal_error()), error)

    if forward.applies(app):
        app.wsgi_app = forward.Forwarding(app, app.wsgi_app)  # type: ignore[method-assign]
    app.wsgi_app = guard.Guard(app.wsgi_app, settings)  # type: ignore[method-assign]  # outermost: before routing
    return app


def shared_state(stores: Stores, settings: Settings, scenario: scenarios.Scenario | None
                 ) -> tuple[ChaosState, scenarios.Player]:
    """Chaos state and scenario progress: in Redis when the store is there (the whole fleet shares them),
    else in this process."""
    if stores.redis is not None:
        from llmsim.chaos.redis_state import RedisChaosState, RedisPlayer

        return (RedisChaosState(stores.redis, fault_config(settings), settings.seed, stores.batch),
                RedisPlayer(stores.redis, scenario, stores.batch.scripts))
    return ChaosState(fault_config(settings), settings.seed), scenarios.Player(scenario)
