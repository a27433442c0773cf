"""The baseline: a bare WSGI app on the same gunicorn + gevent server, replaying recorded answers.

It returns the bytes LLMSim returned for the same request (JSON, or the SSE frames one
by one) without parsing, generating or pacing anything, so LLMSim's time over it is
LLMSim's own overhead.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from llmsim.config import Settings
from llmsim.server import LLMSimServer


def bare_app(recorded: dict[str, Any]) -> Callable[..., Iterable[bytes]]:
    body = recorded["json"].encode()
    frames = [frame.encode() for frame in recorded["frames"]]

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        if b'"stream": true' in request or b'"stream":true' in request:
            start_response("200 OK", [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
            return iter(frames)
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return app


class BareServer(LLMSimServer):
    def __init__(self, settings: Settings, recorded: dict[str, Any]) -> None:
        self.recorded = recorded
        super().__init__(settings)

    def load(self) -> Any:
        return bare_app(self.recorded)


if __name__ == "__main__":  # python bench/bare.py PORT RECORDED.json WORKERS
    port, recorded_path, workers = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    BareServer(Settings(port=port, workers=workers), json.loads(recorded_path.read_text())).run()
