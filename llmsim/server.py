"""Runs the app on gunicorn with gevent workers: thousands of open streams without a thread each."""

from __future__ import annotations

from typing import Any

from gunicorn.app.base import BaseApplication

from llmsim.config import Settings
from llmsim.metrics import multiprocess


class LLMSimServer(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.metrics_dir = multiprocess.make_dir()  # before the workers fork: they write their metrics there
        super().__init__()

    def load_config(self) -> None:
        s = self.settings
        options: dict[str, Any] = {
            "bind": f"{s.host}:{s.port}",
            "workers": s.workers,
            "worker_class": "gevent",
            "worker_connections": s.worker_connections,
            "timeout": 0,  # streams may stay open for minutes; gevent workers heartbeat on their own
            "graceful_timeout": 5,
            "keepalive": 75,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": "warning",
            "child_exit": multiprocess.child_exit,
            "on_exit": lambda _server: multiprocess.remove_dir(self.metrics_dir),
        }
        for key, value in options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from llmsim.app import create_app  # built inside the worker, after gevent has patched the stdlib

        return create_app(self.settings)


def serve(settings: Settings) -> None:
    LLMSimServer(settings).run()
