"""The baseline: a bare WSGI app on the same gunicorn + gevent server, replaying recorded answers.

It returns the bytes LLMSim returned for the same request (JSON, or the SSE frames one
by one) without parsing, generating or pacing anything, so LLMSim's time over it is
LLMSim's own overhead. Given a model, it paces the frames as that model's profile does (TTFT before the
first text delta, one inter-token gap before each further one) on LLMSim's pacing scheduler: the floor of
a paced stream on this stack (gunicorn + gevent + the shared timer), with none of LLMSim's work per event.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from llmsim.config import DEFAULT_PROFILES_DIR, Settings
from llmsim.server import LLMSimServer
from llmsim.timing import ticks
from llmsim.timing.latency import Timing
from llmsim.timing.profiles import load_catalog

DELTA = b"event: response.output_text.delta\n"


def paced(frames: list[bytes], timing: Timing) -> Iterator[bytes]:
    """`frames`, each text delta after its wait (TTFT for the first, an inter-token gap for the others)."""
    rng = random.Random()
    first = True
    for frame in frames:
        if frame.startswith(DELTA):
            ticks.sleep((timing.ttft_ms if first else timing.itl_ms).sample(rng) / 1000)
            first = False
        yield frame


def bare_app(recorded: dict[str, Any], timing: Timing | None = None) -> Callable[..., Iterable[bytes]]:
    body = recorded["json"].encode()
    frames = [frame.encode() for frame in recorded["frames"]]

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        if b'"stream": true' in request or b'"stream":true' in request:
            start_response("200 OK", [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
            return iter(frames) if timing is None else paced(frames, timing)
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return app


class BareServer(LLMSimServer):
    def __init__(self, settings: Settings, recorded: dict[str, Any], timing: Timing | None = None) -> None:
        self.recorded = recorded
        self.timing = timing
        super().__init__(settings)

    def load(self) -> Any:
        return bare_app(self.recorded, self.timing)


if __name__ == "__main__":  # python bench/bare.py PORT RECORDED.json WORKERS [MODEL to pace like]
    port, recorded_path, workers = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    pace = load_catalog([DEFAULT_PROFILES_DIR]).get(sys.argv[4]).timing if len(sys.argv) > 4 else None
    BareServer(Settings(port=port, workers=workers), json.loads(recorded_path.read_text()), pace).run()
