"""The application factory: settings in, a Flask app with every endpoint mounted out."""

from __future__ import annotations

import logging
import time
from typing import Protocol, runtime_checkable

from flask import Flask, Response, request
from flask.json.provider import DefaultJSONProvider

from llmsim.api import admin, chaos, dashboard, errors, forward, guard, mount, stamp, which, writes
from llmsim.api import metrics as api_metrics
from llmsim.api import scenarios as scenarios_api
from llmsim.api.http import client_socket
from llmsim.api.url_rules import LazyBuildRule
from llmsim.api.which import ARRIVED
from llmsim.backends import load_backend, load_models
from llmsim.chaos import scenarios
from llmsim.chaos.admission import Gate
from llmsim.chaos.rules import fault_config
from llmsim.chaos.state import ChaosState
from llmsim.config import Settings
from llmsim.metrics.meter import Measured
from llmsim.metrics.registry import Metrics
from llmsim.pipeline import Pipeline
from llmsim.responses.background import BackgroundRunner
from llmsim.responses.replay import Replay
from llmsim.runtime import waits
from llmsim.services import Services
from llmsim.store import Stores, open_stores
from llmsim.store.redis_client import unavailable_errors
from llmsim.timing.pacing import Pacer, QueueObserver

log = logging.getLogger("llmsim")


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


def create_app(settings: Settings | None = None) -> Flask:
    settings = settings or Settings()
    backend = load_backend(settings)
    catalog = load_models(backend, settings)
    stores = open_stores(settings.store, settings.store_max_entries, settings.store_ttl_seconds, Replay.load)
    scenario = scenarios.load(settings.scenario_file) if settings.scenario_file else None
    chaos_state, player = shared_state(stores, settings, scenario)
    metrics = Metrics(shared_store=settings.store != "memory")
    gate = Gate(chaos_state, player, Measured(metrics))
    runner = BackgroundRunner(stores.responses)
    runner.on_queue = metrics.background_queue.inc
    pipeline = Pipeline(catalog, backend, stores.responses, seed=settings.seed,
                        pacer=Pacer(settings.speed, observer=metrics.queues), conversations=stores.conversations,
                        gate=gate, batch=stores.batch, runner=runner)
    if isinstance(backend, Queued):
        backend.observe(metrics.queues)

    app = _Flask("llmsim")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    assert isinstance(app.json, DefaultJSONProvider)
    app.json.sort_keys = False
    app.json.ensure_ascii = False
    app.extensions["llmsim"] = Services(settings, catalog, pipeline)
    mount(app)
    writes.install(app, stores.batch, errors.store_unavailable)
    chaos.install(app, chaos_state)
    api_metrics.install(app, metrics, pipeline)
    app.register_blueprint(admin.bp)
    app.register_blueprint(admin.health_bp)
    app.register_blueprint(scenarios_api.bp)
    app.register_blueprint(dashboard.bp)
    app.register_blueprint(dashboard.api)

    @app.before_request
    def _start() -> None:
        request.environ[ARRIVED] = (stamp.request_id(), time.perf_counter())
        waits.watch(client_socket())

    @app.after_request
    def _headers(response: Response) -> Response:
        request_id, started = request.environ.get(ARRIVED, ("", 0))
        which.surface().answer_headers(response.headers, request_id)
        stamp.stamp(response.headers, request_id, started)
        return response

    errors.install(app, settings.max_body_bytes, unavailable_errors() if stores.redis is not None else ())
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
