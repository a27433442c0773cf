"""The servers the benches start: the floors (bench/bare.py, bench/bare_forwarder.py) as subprocesses, the
answers bare.py replays, and several servers started and stopped together.

A server takes seconds to start and to stop; a bench of six servers spent half a minute on them one after another.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import httpx

from bench.common import PROMPT, ROOT
from llmsim.api.http import SEED_HEADER, SPEED_HEADER
from llmsim.testing import free_port

# Of the answer bare.py replays, and of LLMSim's in bench/run.py (a): the same bytes. Its gpt-4o-mini answer to
# PROMPT has 112 output tokens, the mean of unseeded ones: (a)'s streaming ratio grows with the answer's length
# (seed 1: 81).
SEED = 29


class Server(Protocol):
    """What `running` starts and stops: llmsim.testing.ServerProcess, or a BenchServer."""

    def start(self) -> Any: ...
    def stop(self) -> None: ...


class BenchServer:
    """A bench's own server (`python -m bench.NAME PORT ...`) on a free port: up once it answers HTTP at all."""

    def __init__(self, module: str, *arguments: str, startup_timeout: float = 60.0) -> None:
        self.port = free_port()
        self.command = [sys.executable, "-m", module, str(self.port), *arguments]
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.files: list[str] = []  # removed when it stops

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/openai/v1"

    def start(self) -> BenchServer:
        self.process = subprocess.Popen(self.command, cwd=ROOT)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.command[2]} exited with {self.process.returncode}")
            try:
                urllib.request.urlopen(f"{self.url}/", timeout=1).close()
                return self
            except urllib.error.HTTPError:  # a 404 or an upstream's error: it answers
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.command[2]} did not start within {self.startup_timeout:g} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for name in self.files:
            Path(name).unlink(missing_ok=True)

    def __enter__(self) -> BenchServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


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
