"""The servers the benches start: the floors (bench/bare.py, bench/bare_forwarder.py) as subprocesses, the
answers bare.py replays, and several servers started and stopped together.

A server takes seconds to start and to stop; a bench of six servers spent half a minute on them one after another.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import httpx

from bench.common import PROMPT, ROOT
from llmsim.testing import ServerProcess

# Of the answer bare.py replays, and of LLMSim's in bench/run.py (a): the same bytes. Its gpt-4o-mini answer to
# PROMPT has 112 output tokens, the mean of unseeded ones: (a)'s streaming ratio grows with the answer's length
# (seed 1: 81).
SEED = 29


class Server(Protocol):
    """What `running` starts and stops: llmsim.testing.ServerProcess, or a BenchServer."""

    def start(self) -> Any: ...
    def stop(self) -> None: ...


class BenchServer(ServerProcess):
    """A bench's own server (`python -m bench.NAME PORT ...`) on a free port: up once it answers HTTP at all,
    stopped with SIGTERM; the files in `files` are removed when it stops."""

    probe = "/"
    stop_signal = signal.SIGTERM
    cwd = str(ROOT)

    def __init__(self, module: str, *arguments: str, startup_timeout: float = 60.0) -> None:
        super().__init__(*arguments, startup_timeout=startup_timeout)
        self.module = self.name = module
        self.files: list[str] = []

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, str(self.port), *self.flags]

    def stop(self) -> None:
        super().stop()
        for name in self.files:
            Path(name).unlink(missing_ok=True)


def bare(recorded: dict[str, object], workers: int, pace: str | None = None, floor: str | None = None
         ) -> BenchServer:
    """bench/bare.py replaying `recorded` (record()): paced like the model `pace`, or LLMSim's app or Flask alone
    answering its JSON (`floor`: "--floor", "--flask")."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(recorded, file)
    extra = [floor] if floor else [pace] if pace else []
    server = BenchServer("bench.bare", file.name, str(workers), *extra)
    server.files.append(file.name)
    return server


def forwarder(upstream: str, workers: int) -> BenchServer:
    """bench/bare_forwarder.py in front of `upstream`: the floor of an HTTP hop."""
    return BenchServer("bench.bare_forwarder", upstream, str(workers))


def record(base_url: str, model: str) -> dict[str, object]:
    """One JSON answer and one stream's SSE frames, for the bare server to replay: seeded, so bare.py replays the
    same answer in every run; at speed 0 (the same bytes, at once), from a paced server too."""
    # Here, not at the top: llmsim.api imports the whole app (Flask, the pipeline), half a second of CPU that a
    # bench starting servers only (bench/proxy_bench.py) would spend for two header names.
    from llmsim.api.http import SEED_HEADER, SPEED_HEADER

    body, seeded = {"model": model, "input": PROMPT}, {SEED_HEADER: str(SEED), SPEED_HEADER: "0"}
    answer = httpx.post(f"{base_url}/responses", json=body, headers=seeded, timeout=60).text
    with httpx.stream("POST", f"{base_url}/responses", json={**body, "stream": True}, headers=seeded,
                      timeout=60) as stream:
        text = stream.read().decode()
    return {"json": answer, "frames": [frame + "\n\n" for frame in text.split("\n\n") if frame]}


@contextlib.contextmanager
def running(*servers: Server) -> Iterator[None]:
    """`servers` started together and, on the way out, stopped together (each waits out its own shutdown)."""
    with ThreadPoolExecutor(max(1, len(servers))) as pool:
        started = [pool.submit(server.start) for server in servers]
        try:
            for future in started:
                future.result()
            yield
        finally:
            list(pool.map(lambda server: server.stop(), servers))
