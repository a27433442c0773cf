"""Rate limits are exact at --workers N without Redis: the workers' buckets are one table (a mapped file), so a
burst at each limit (RPM, TPM, ITPM, OTPM) admits what one process would, and the headers say so."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from llmsim.chaos.ratelimit import Charge, Limits
from llmsim.chaos.shared_limits import SharedRateLimiter
from llmsim.testing import ServerProcess
from stateful import Clock

KEY = ("sk-test", "gpt-4o")


def test_two_workers_tables_are_one(tmp_path: Path) -> None:
    clock = Clock()
    path = str(tmp_path / "buckets")
    one, two = SharedRateLimiter(path, clock), SharedRateLimiter(path, clock)  # each its own file and lock
    limits = Limits(rpm=3, tpm=1000)
    assert one.acquire(KEY, limits, Charge(300)).allowed
    assert two.acquire(KEY, limits, Charge(300)).allowed
    verdict = one.acquire(KEY, limits, Charge(300))
    assert verdict.allowed and verdict.headers()["x-ratelimit-remaining-requests"] == "0"
    assert verdict.headers()["x-ratelimit-remaining-tokens"] == "100"
    refused = two.acquire(KEY, limits, Charge(10))
    assert refused.exceeded == "requests" and refused.retry_after == pytest.approx(20.0)
    assert one.rejected == two.rejected == 1
    two.settle(KEY, limits, Charge(-200))  # settled in the other worker: the same bucket
    clock.now += 20
    assert one.acquire(KEY, limits, Charge(290)).headers()["x-ratelimit-remaining-tokens"] == str(
        math.floor(100 + 200 + 20 * 1000 / 60 - 290))
    assert two.acquire(("sk-other", "gpt-4o"), limits, Charge(0)).allowed  # per key
    one.reset()
    assert two.rejected == 0 and two.acquire(KEY, limits, Charge(1000)).allowed  # full again


def test_a_full_probe_window_gives_the_least_recent_bucket_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    from llmsim.chaos import shared_limits

    monkeypatch.setattr(shared_limits, "SLOTS", 4)
    monkeypatch.setattr(shared_limits, "PROBE", 4)
    monkeypatch.setattr(shared_limits, "SIZE", shared_limits.HEADER.size + 4 * shared_limits.SLOT.size)
    clock = Clock()
    limiter = SharedRateLimiter(str(tmp_path / "buckets"), clock)
    limits = Limits(rpm=1)
    for key in range(4):
        clock.now += 1
        assert limiter.acquire((f"k{key}", "m"), limits, 0).allowed
    assert not limiter.acquire(("k3", "m"), limits, 0).allowed  # still there
    clock.now += 1
    assert limiter.acquire(("k4", "m"), limits, 0).allowed  # a fifth: k0's slot, the least recent
    assert limiter.acquire(("k0", "m"), limits, 0).allowed  # forgotten: full again (lenient)


PROFILES = """
models:
  - {id: rpm-model, rate_limits: {rpm: 20}}
  - {id: tpm-model, rate_limits: {tpm: 2400}}
  - {id: itpm-model, rate_limits: {itpm: 2000}}
  - {id: otpm-model, rate_limits: {otpm: 320}}
"""
BURST = 60
INPUT = "word " * 100
OUTPUT = 16


def _burst(server: ServerProcess, model: str) -> tuple[list[httpx.Response], float]:
    def one(_: int) -> httpx.Response:
        return httpx.post(f"{server.base_url}/responses", timeout=30, headers={
            "Authorization": "Bearer sk-burst", "Connection": "close"},  # a new connection each: both workers
            json={"model": model, "input": INPUT, "max_output_tokens": OUTPUT})

    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(BURST)))
    return answers, time.monotonic() - started


@pytest.mark.parametrize(("model", "limit", "name", "charge"), [
    ("rpm-model", 20, "requests", lambda usage: 1),
    ("tpm-model", 2400, "tokens", lambda usage: usage["input_tokens"] + OUTPUT),
    ("itpm-model", 2000, "tokens", lambda usage: usage["input_tokens"]),
    ("otpm-model", 320, "tokens", lambda usage: OUTPUT),
])
def test_a_burst_at_each_limit_over_two_workers_admits_what_the_limit_says(
        shared_server: Callable[..., ServerProcess], tmp_path_factory: pytest.TempPathFactory, model: str,
        limit: int, name: str, charge: Callable[[dict[str, int]], int]) -> None:
    profiles = tmp_path_factory.getbasetemp() / "burst-profiles"
    profiles.mkdir(exist_ok=True)
    (profiles / "limits.yaml").write_text(PROFILES)
    server = shared_server("--workers", "2", "--profiles-dir", str(profiles))
    answers, seconds = _burst(server, model)
    admitted = [answer for answer in answers if answer.status_code == 200]
    refused = [answer for answer in answers if answer.status_code == 429]
    assert len(admitted) + len(refused) == BURST
    usage = admitted[0].json()["usage"]
    assert all(answer.json()["status"] == "incomplete" for answer in admitted)  # each used its 16 output tokens
    each = charge(usage)
    refilled = seconds * limit / 60 / each  # what the buckets refilled while the burst went on
    assert limit // each <= len(admitted) <= limit // each + math.ceil(refilled), (len(admitted), seconds)
    assert {answer.headers[f"x-ratelimit-limit-{name}"] for answer in answers} == {str(limit)}
    assert min(int(answer.headers[f"x-ratelimit-remaining-{name}"]) for answer in admitted) < each
    assert all(int(answer.headers[f"x-ratelimit-remaining-{name}"]) < each for answer in refused)
