"""`python -m bench.stalls`: LLMSim under its own chaos and hostile input (issue 13), against the goals.

(1) /llmsim/health latency on fresh connections, idle and while 100 `latency_spike` requests wait
    (goal: < 100 ms).
(2) The same under 4,000 and 4,200 slow clients: idle connections, requests cut in their head and in
    their body (4,200 is past the default cap of 4,096 connections).
(3) Cost against input size: `truncation: "auto"` over N short items, a tool schema with `minItems: N`,
    and a body of N MB past the context window (goal: about linear; bounded where the input is).
(4) Throughput of background responses (created, then polled every 2 s as OpenAI's guide does, and every
    0.5 s) against the same requests made synchronously, closed-loop clients at speed 1, as ratios measured
    in one run (goal: about 1; every poll is a request, so on a CPU-bound server frequent polling costs).

Each part starts its own server (a part leaves its server changed: thousands of sockets, held requests). A smoke
run shares one (part 4's requests carry their speed in X-LLMSim-Speed): starting a server was most of its time.
On a busy machine the figures are the machine's as much as LLMSim's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx

if __package__ in (None, ""):  # `python bench/stalls.py`: the repository's root on the path, as for `-m bench.stalls`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.common import counts, more_files, parse, smoke  # noqa: E402
from llmsim.testing import ServerProcess  # noqa: E402

MODEL = "gpt-4o-mini"


def send(server: ServerProcess, raw: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(raw)
    return sock


def post(body: dict, headers: dict[str, str] | None = None) -> bytes:
    data = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    return (f"POST /openai/v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{head}"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data


def probes(server: ServerProcess, count: int) -> list[float]:
    """Milliseconds for GET /llmsim/health, each on a fresh connection, until the whole answer is in."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
            sock.sendall(b"GET /llmsim/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        assert data.startswith(b"HTTP/1.1 200"), data[:80]
        times.append((time.perf_counter() - started) * 1000)
        time.sleep(0.02)
    return times


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    return (f"p50 {statistics.median(ordered):7.1f} ms  p99 {ordered[int(0.99 * (len(ordered) - 1))]:7.1f} ms  "
            f"max {ordered[-1]:7.1f} ms")


def warm(server: ServerProcess) -> None:
    httpx.post(f"{server.base_url}/responses", json={"model": MODEL, "input": "warm up"}, timeout=60)


SHARED: dict[str, ServerProcess] = {}  # a smoke run's servers, by speed


@contextlib.contextmanager
def serving(speed: str) -> Iterator[ServerProcess]:
    """A warmed server at `speed`: the smoke run's shared one, or one of the part's own, stopped after it."""
    if speed in SHARED:
        yield SHARED[speed]
        return
    with ServerProcess("--speed", speed) as server:
        warm(server)
        yield server


def health_under_spikes(args: argparse.Namespace) -> list[str]:
    with serving("0") as server:
        idle = probes(server, args.probes)
        spiked = [send(server, post({"model": MODEL, "input": "hi", "stream": True},
                                    {"X-LLMSim-Fault": "latency_spike;seconds=600"})) for _ in range(100)]
        time.sleep(args.settle)
        loaded = probes(server, args.probes)
        for sock in spiked:
            sock.close()
    return [f"(1) health, idle:                       {summary(idle)}",
            f"    health, 100 spiked requests waiting: {summary(loaded)}   goal p99 < 100 ms: "
            f"{'yes' if sorted(loaded)[int(0.99 * (len(loaded) - 1))] < 100 else 'NO'}"]


def health_under_slow_clients(args: argparse.Namespace) -> list[str]:
    parts = [b"", b"POST /openai/v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\n",
             b"POST /openai/v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             b"Content-Length: 1000\r\n\r\n{"]
    lines = []
    for count in args.slow_clients:
        with serving("0") as server:
            slow = []
            for i in range(count):
                slow.append(send(server, parts[i % 3]))
            time.sleep(args.settle)
            times = probes(server, args.probes)
            for sock in slow:
                sock.close()
        lines.append(f"(2) health, {count:,} slow clients:        {summary(times)}")
    return lines


def timed(server: ServerProcess, body: dict) -> tuple[float, int]:
    started = time.perf_counter()
    answer = httpx.post(f"{server.base_url}/responses", json=body, timeout=600)
    return time.perf_counter() - started, answer.status_code


def costs(args: argparse.Namespace) -> list[str]:
    item = "the tide comes in and goes out, and the keeper writes it down " * 4
    def scaled(sizes: list[int]) -> list[float]:
        return [max(1, round(n * args.scale)) for n in sizes]

    cases: dict[str, tuple[list[float], Callable[[Any], dict[str, Any]]]] = {
        "truncation auto, N items": (scaled([1500, 3000, 6000, 12000]), lambda n: {
            "model": "gpt-4", "truncation": "auto", "input": [{"role": "user", "content": item} for _ in range(n)]}),
        "tool schema, minItems N": (scaled([1000, 10_000, 100_000, 1_000_000]), lambda n: {
            "model": MODEL, "input": "plot", "tool_choice": "required", "tools": [{
                "type": "function", "name": "plot", "parameters": {
                    "type": "object", "required": ["points"],
                    "properties": {"points": {"type": "array", "minItems": n, "items": {"type": "number"}}}}}]}),
        "body of N MB past the window": ([n * args.scale for n in (4, 8, 16, 30)], lambda n: {
            "model": "gpt-4o", "input": "lighthouse " * int(n * 1024 * 1024 / 11)}),
    }
    lines = ["(3) cost against input size (ms per request; x = cost per unit of input, against the smallest)"]
    with serving("0") as server:
        for name, (sizes, body) in cases.items():
            cells = []
            first = None
            for n in sizes:
                seconds, status = min((timed(server, body(n)) for _ in range(args.repeat)), key=lambda t: t[0])
                per_unit = seconds / n
                first = first or per_unit
                cells.append(f"N={n:,}: {seconds * 1000:7.0f} ms ({status}, x{per_unit / first:.2f})")
            lines.append(f"    {name:30s} " + "  ".join(cells))
    return lines


async def _closed_loop(base: str, clients: int, window: float, background: bool, poll: float, pace: float) -> int:
    done = 0
    speed = {"X-LLMSim-Speed": f"{pace:g}"}  # the server's own, or a smoke run's on its shared speed-0 server

    async def client(session: aiohttp.ClientSession, stop: float) -> None:
        nonlocal done
        while time.monotonic() < stop:
            async with session.post(f"{base}/responses", json={"model": MODEL, "input": "hi", "background": background},
                                    headers=speed) as answer:
                response = await answer.json()
            while response["status"] in ("queued", "in_progress"):
                await asyncio.sleep(poll)
                async with session.get(f"{base}/responses/{response['id']}") as answer:
                    response = await answer.json()
            if time.monotonic() < stop:
                done += response["status"] == "completed"

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        stop = time.monotonic() + window
        await asyncio.gather(*(client(session, stop) for _ in range(clients)))
    return done


def background_ratio(args: argparse.Namespace) -> list[str]:
    lines = [f"(4) {args.clients} closed-loop clients, {args.window:g} s each, at speed {args.speed:g}"]
    with serving(f"{args.speed:g}") as server:
        sync = asyncio.run(_closed_loop(server.base_url, args.clients, args.window, False, 0, args.speed))
        lines.append(f"    synchronous:                   {sync / args.window:6.1f} responses/s")
        for poll in args.poll:
            background = asyncio.run(_closed_loop(server.base_url, args.clients, args.window, True, poll,
                                                 args.speed))
            lines.append(f"    background, polled every {poll:3g} s: {background / args.window:6.1f} responses/s: "
                         f"background/sync = {background / sync if sync else float('nan'):.2f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["1", "2", "3", "4", "all"], default="all")
    parser.add_argument("--probes", type=int, default=50, help="health probes per figure")
    parser.add_argument("--repeat", type=int, default=2, help="runs per input size; the fastest counts")
    parser.add_argument("--clients", type=int, default=200, help="closed-loop clients of part 4")
    parser.add_argument("--window", type=float, default=30.0, help="seconds each mode of part 4 runs")
    parser.add_argument("--poll", type=lambda v: [float(x) for x in v.split(",")], default=[2.0, 0.5],
                        help="seconds between a background client's polls, comma-separated")
    parser.add_argument("--slow-clients", type=counts, default=[4000, 4200],
                        help="slow clients of part 2, per server (the default cap: 4,096 connections)")
    parser.add_argument("--scale", type=float, default=1.0, help="part 3's input sizes, scaled")
    parser.add_argument("--speed", type=float, default=1.0, help="part 4's pacing (1: the profile's real time)")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="seconds parts 1 and 2 wait for the server to take their held connections in")
    # At speed 10 a response takes a tenth of its real time: a 1 s window still sees several finish
    smoke(parser, probes=5, repeat=1, clients=10, window=1.0, poll=[0.2], slow_clients=[50], scale=0.01, speed=10.0,
          settle=0.3)
    args = parse(parser)
    more_files()  # 4,200 slow clients hold 8,400 sockets here
    parts = {"1": health_under_spikes, "2": health_under_slow_clients, "3": costs, "4": background_ratio}
    with contextlib.ExitStack() as stack:
        if args.smoke:
            shared = ServerProcess("--speed", "0")  # part 4 paces its requests by the speed header
            SHARED.update({"0": shared, f"{args.speed:g}": shared})
            stack.enter_context(shared)
            warm(shared)
        for key, part in parts.items():
            if args.part in (key, "all"):
                print("\n".join(part(args)), flush=True)


if __name__ == "__main__":
    main()
