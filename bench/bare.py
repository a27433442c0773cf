"""The baseline: a bare WSGI app on the same gunicorn + gevent server, replaying recorded answers.

It returns the bytes LLMSim returned for the same request without parsing, generating or pacing anything, so
LLMSim's time over it is LLMSim's own overhead. Written as LLMSim writes them: a JSON answer's head with its body,
and a stream nothing paces (speed 0) whole, its head, frames and last chunk in one write (LLMSim corks the
connection, llmsim/api/sse.py). Writing each frame with its own `send`, as this floor once did, makes the same
bytes 4-5x slower on this stack, and LLMSim's streaming looked as fast as a floor that was not one.

Given a model, it paces the frames as that model's profile does (TTFT before the first text delta, one
inter-token gap before each further one), the deltas sent by LLMSim's own pacing writer: the floor of a paced
stream on this stack (gunicorn + gevent + the shared timer and writer), with none of LLMSim's work per request
or per event.
With `--floor`, LLMSim's own app answers instead, its create views replaced by one that parses the body and returns
the recorded JSON: Flask and LLMSim's hooks (API key, request id, headers, the request log's and metrics' hooks)
with none of the answer's work, the most a JSON answer can reach on this stack. With `--flask`, a Flask app of that
one view and no hooks: Flask's own share.

    python -m bench.bare PORT RECORDED.json WORKERS [MODEL to pace like | --floor | --flask]
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from llmsim.config import DEFAULT_PROFILES_DIR, Settings
from llmsim.runtime import sockets, ticks
from llmsim.runtime.release import release
from llmsim.server import LLMSimServer
from llmsim.timing.latency import Timing
from llmsim.timing.pacing import ModelLoad, RunPace, Schedule
from llmsim.timing.profiles import load_catalog

DELTA = b"event: response.output_text.delta\n"


def paced(frames: list[bytes], timing: Timing, client: Any) -> Iterator[bytes]:
    """`frames` as the model's profile paces them: the TTFT before the first text delta, one inter-token gap
    before each further one, which LLMSim's own writer sends from the worker's pacing timer, as it does a
    paced run's (llmsim/runtime/release.py)."""
    rng = random.Random()
    deltas = [i for i, frame in enumerate(frames) if frame.startswith(DELTA)]
    first, last = deltas[0], deltas[-1]
    yield from frames[:first]
    ticks.sleep(timing.ttft_ms.sample(rng) / 1000)
    yield frames[first]
    schedule = Schedule(time.monotonic(), ModelLoad(None), 1.0, time.monotonic, ticks.sleep)
    sockets.flush(client)
    yield from release(frames[first + 1:last + 1], RunPace(schedule, timing.itl_ms.samples(rng, last - first)),
                       client, True)
    yield from frames[last + 1:]


def bare_app(recorded: dict[str, Any], timing: Timing | None = None) -> Callable[..., Iterable[bytes]]:
    body = recorded["json"].encode()
    frames = [frame.encode() for frame in recorded["frames"]]
    whole = b"".join(frames)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        if b'"stream": true' in request or b'"stream":true' in request:
            start_response("200 OK", [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
            if timing is None:  # as LLMSim writes a stream nothing paces: head, body and end in one write
                sockets.cork(environ["gunicorn.socket"])
                return [whole]
            return paced(frames, timing, environ["gunicorn.socket"])
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return app


def floor_app(recorded: dict[str, Any], settings: Settings, hooks: bool = True) -> Any:
    from flask import Flask, current_app

    from llmsim.api.http import json_body
    from llmsim.app import create_app

    app = create_app(settings) if hooks else Flask("flask")
    body = recorded["json"]

    def create() -> Any:
        json_body()
        return current_app.response_class(body, mimetype="application/json")

    if not hooks:
        app.post("/openai/v1/responses")(create)
    replaced = [endpoint for endpoint in app.view_functions
                if endpoint.startswith("surface_responses") and endpoint.endswith(".POST_responses")]
    assert not hooks or replaced, "no create view of the Responses surface found: the floor would run the whole app"
    for endpoint in replaced:
        app.view_functions[endpoint] = create
    return app


class BareServer(LLMSimServer):
    def __init__(self, settings: Settings, recorded: dict[str, Any], timing: Timing | None = None,
                 floor: str | None = None) -> None:
        self.recorded = recorded
        self.timing = timing
        self.floor = floor
        super().__init__(settings)

    def load(self) -> Any:
        if self.floor:
            return floor_app(self.recorded, self.settings, hooks=self.floor == "--floor")
        return bare_app(self.recorded, self.timing)


if __name__ == "__main__":
    port, recorded_path, workers = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    floor = sys.argv[4] if sys.argv[4:5] in (["--floor"], ["--flask"]) else None
    pace = load_catalog([DEFAULT_PROFILES_DIR]).resolve(sys.argv[4]).timing if len(sys.argv) > 4 and not floor else None
    BareServer(Settings(port=port, workers=workers, speed=0.0), json.loads(recorded_path.read_text()), pace,
               floor).run()
