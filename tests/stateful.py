"""Helpers shared by the store, rate-limit, conversation, background and SQLite tests."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import openai
import pytest
from openai.types.responses import Response

from llmsim.store import StoredResponse
from llmsim.testing import ServerProcess

# A model whose pacing is fixed and slow enough to act while it generates: 5 ms to the first token,
# then 40 ms per token. Paced only when a request asks for speed 1 (the test servers run at speed 0).
SLOW_PROFILE = """
models:
  - id: slow-model
    timing:
      ttft_ms: {kind: normal, mean: 5, stddev: 0}
      itl_ms: {kind: normal, mean: 40, stddev: 0}
      prefill_tokens_per_s: 1000000
      reasoning_tokens_per_s: 1000
"""
PACED = {"X-LLMSim-Speed": "1"}
FINAL = ("completed", "failed", "incomplete", "cancelled")
T = TypeVar("T")


def slow_profiles(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "slow.yaml").write_text(SLOW_PROFILE)
    return directory


def client_for(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)



def until(check: Callable[[], T | None], timeout: float = 30.0, every: float = 0.02) -> T:
    """Poll `check` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"condition not met within {timeout}s"
        time.sleep(every)


def wait_final(client: openai.OpenAI, response_id: str) -> Response:
    # polled every 0.1 s: a response that runs for seconds, polled every 0.02 s, cost the server a core's second
    return until(lambda: (r := client.responses.retrieve(response_id)).status in FINAL and r, every=0.1)


def kill_hard(server: ServerProcess) -> None:
    """kill -9 the server and every worker it forked: nothing gets to clean up or flush."""
    assert server.process is not None
    pid = server.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for process_id in [pid, *map(int, children)]:
        os.kill(process_id, signal.SIGKILL)
    server.process.wait()


class Clock:
    """A clock the test moves by hand, for stores and rate limiters that take `clock=`."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def record(response_id: str, status: str = "completed") -> StoredResponse:
    return StoredResponse({"id": response_id, "status": status, "output": []}, input_items=[])


@contextmanager
def tmpfs(folder: Path, size: str, why: str = "") -> Iterator[Path]:
    """`folder` (made here) with a tmpfs of `size` mounted on it (`mount -o size=`), unmounted after; the test is
    skipped where mounting is not allowed (it needs root, or CAP_SYS_ADMIN)."""
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root){why}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


@contextmanager
def recording_relay(tapes: Path, key: str, root: str = "/v1") -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """An upstream LLMSim that checks `key`, and a replay server in front of it (`--on-miss proxy`) that forwards a
    miss to the upstream's `root` with that key, records it in `tapes` and answers a repeat from it. Both start
    at once (each start costs seconds on a busy machine) and stop after."""
    tapes.mkdir()
    upstream = ServerProcess("--speed", "0", "--seed", "3", "--api-key", key)
    relay = ServerProcess("--backend", "replay", "--cassettes", str(tapes), "--on-miss", "proxy", "--record",
                          str(tapes), "--upstream", f"{upstream.url}{root}", "--upstream-api-key-env", "UPSTREAM_KEY",
                          "--speed", "0", env={"UPSTREAM_KEY": key})
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(ServerProcess.start, (upstream, relay)))
    try:
        yield upstream, relay
    finally:
        relay.stop()
        upstream.stop()
