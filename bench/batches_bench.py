"""`python -m bench.batches_bench`: what a running batch costs the server's other requests (issue 42).

One server at speed 0 (a line never waits, so the runner's turns between lines are all that lets other requests
in). A client sends chat completions one after another on a kept-alive connection, in windows that alternate:
idle, then while a batch of `--lines` chat lines runs. The figures: the requests' p50 and p99 in each, and the
ratios during/idle (goal: p99 during a batch within 2x of idle, and under 100 ms); the batch's lines per second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import httpx

if __package__ in (None, ""):  # `python bench/batches_bench.py`: the repository's root on the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.common import goal, machine, parse, quantile, smoke  # noqa: E402
from llmsim.testing import ServerProcess  # noqa: E402

MODEL = "gpt-4o-mini"
ASK = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}


def batch_file(client: httpx.Client, lines: int) -> str:
    data = "\n".join(json.dumps({"custom_id": f"l{i}", "method": "POST", "url": "/v1/chat/completions",
                                 "body": {**ASK, "messages": [{"role": "user", "content": f"line {i}"}]}})
                     for i in range(lines))
    answer = client.post("/v1/files", files={"file": ("bench.jsonl", data.encode())}, data={"purpose": "batch"})
    return str(answer.json()["id"])


def timed(client: httpx.Client, until: float) -> list[float]:
    """Milliseconds per chat completion, one after another until `until`."""
    times = []
    while time.monotonic() < until:
        started = time.perf_counter()
        client.post("/v1/chat/completions", json=ASK).raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
    return times


def during(client: httpx.Client, file_id: str, window: float) -> tuple[list[float], float]:
    """Requests timed while a batch of the file's lines runs (at most `window` s); the batch's lines per second."""
    started = time.monotonic()
    batch = client.post("/v1/batches", json={"input_file_id": file_id, "endpoint": "/v1/chat/completions",
                                             "completion_window": "24h"}).json()
    times = timed(client, started + window)
    while (state := client.get(f"/v1/batches/{batch['id']}").json())["status"] not in ("completed", "failed"):
        time.sleep(0.05)
    return times, state["request_counts"]["total"] / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=2000, help="lines of each batch")
    parser.add_argument("--window", type=float, default=3.0, help="seconds of each window")
    parser.add_argument("--rounds", type=int, default=5, help="idle and busy windows, alternating")
    smoke(parser, lines=100, window=0.3, rounds=1)
    args = parse(parser)
    print(machine())
    rows = []
    with ServerProcess("--speed", "0") as server, httpx.Client(base_url=server.url, timeout=120) as client:
        timed(client, time.monotonic() + 0.5)  # warm
        file_id = batch_file(client, args.lines)
        for _ in range(args.rounds):
            idle = timed(client, time.monotonic() + args.window)
            busy, rate = during(client, file_id, args.window)
            rows.append((idle, busy, rate))
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        idle_q = statistics.median(quantile(idle, q) for idle, _, _ in rows)
        busy_q = statistics.median(quantile(busy, q) for _, busy, _ in rows)
        ratio = statistics.median(quantile(busy, q) / quantile(idle, q) for idle, busy, _ in rows)
        print(f"request {name}: idle {idle_q:7.2f} ms, during a batch {busy_q:7.2f} ms: during/idle = {ratio:.2f}")
        if name == "p99":
            print(goal("p99 during/idle", ratio, 2.0, higher=False))
            print(goal("p99 during a batch", busy_q, 100.0, unit=" ms", higher=False))
    print(f"batch: {statistics.median(rate for _, _, rate in rows):.0f} lines/s")


if __name__ == "__main__":
    main()
