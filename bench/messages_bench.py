"""`python -m bench.messages_bench`: Messages API streams per core against Responses streams per core, at speed 0,
on the same answer, in one run.

One server (one worker) answers both surfaces from one scenario (the same text, so the backend's work is the
same); concurrent clients stream from one surface at a time, rounds alternating, and the server's CPU seconds in
each window give streams per CPU-second: streams per core. The goal is that the second surface costs no more
than a tenth above the first (Messages streams per core >= 0.9x Responses'). Then paced streams of one Claude
profile on both surfaces at the same load: the median gap between text deltas against the profile's p50. Last,
what a big body costs to parse: one base64 image of --image-mb MB on each surface, rounds alternating, as ms per
MB (goal: Messages within 2x of Responses), with /llmsim/health probed meanwhile (its slowest answer).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import threading
import time

import aiohttp
import httpx

from bench.closed_loop import alternating, scripted_server
from bench.common import goal, machine, parse, smoke, table
from llmsim.testing import ServerProcess

ANSWER = " ".join(["Streams carry the same words on either surface, one delta at a time."] * 12)
SURFACES = {
    "responses": ("/v1/responses", {"model": "gpt-4o", "input": "Tell me about streams.", "stream": True},
                  b"response.completed"),
    "messages": ("/v1/messages", {"model": "claude-sonnet-4-6", "max_tokens": 1024, "stream": True,
                                  "messages": [{"role": "user", "content": "Tell me about streams."}]},
                 b"message_stop"),
}


PACED_MODEL = "claude-haiku-4-5"  # one profile for both surfaces (the Responses API serves Claude profiles too)
MARKS = {"responses": b"event: response.output_text.delta\n", "messages": b"event: content_block_delta\n"}


async def _paced_client(session: aiohttp.ClientSession, url: str, body: dict[str, object], mark: bytes,
                        deadline: float, gaps: list[float]) -> None:
    """Streams until the deadline; the gaps between text deltas as they arrive (the first of each stream left
    out: it is the TTFT)."""
    while time.perf_counter() < deadline:
        last = None
        async with session.post(url, json=body) as response:
            async for chunk in response.content.iter_any():
                now = time.perf_counter()
                for _ in range(chunk.count(mark)):
                    if last is not None:
                        gaps.append((now - last) * 1000)
                    last = now


async def _paced_window(base: str, surface: str, clients: int, seconds: float, speed: float) -> list[float]:
    path, body, _ = SURFACES[surface]
    body = {**body, "model": PACED_MODEL}
    gaps: list[float] = []
    deadline = time.perf_counter() + seconds
    headers = {"X-LLMSim-Speed": str(speed)}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients), headers=headers) as session:
        await asyncio.gather(*(_paced_client(session, base + path, body, MARKS[surface], deadline, gaps)
                               for _ in range(clients)))
    return gaps


def paced(server: ServerProcess, clients: int, seconds: float, speed: float) -> list[list[str]]:
    """Per surface: the median gap between text deltas against the profile's inter-token p50 at this speed."""
    from llmsim.config import DEFAULT_PROFILES_DIR
    from llmsim.timing.profiles import load_catalog

    timing = load_catalog([DEFAULT_PROFILES_DIR]).resolve(PACED_MODEL).timing
    assert timing is not None
    expected = timing.itl_ms.p50 / speed
    rows = []
    for surface in SURFACES:
        gaps = asyncio.run(_paced_window(server.url, surface, clients, seconds, speed))
        median = statistics.median(gaps) if gaps else float("nan")
        rows.append([surface, f"{len(gaps)}", f"{median:.2f}", f"{expected:.2f}", f"{median / expected:.2f}x"])
    return rows


def image_bodies(megabytes: float) -> dict[str, tuple[str, bytes]]:
    """The same image on each surface, as the bytes each request sends."""
    data = base64.b64encode(os.urandom(int(megabytes * 1024 * 1024 * 3 / 4))).decode()
    bodies = {
        "responses": ("/v1/responses", {"model": "gpt-4o", "max_output_tokens": 16, "input": [{
            "role": "user", "content": [{"type": "input_text", "text": "What is this?"},
                                        {"type": "input_image", "image_url": f"data:image/png;base64,{data}"}]}]}),
        "messages": ("/v1/messages", {"model": "claude-sonnet-4-6", "max_tokens": 16, "messages": [{
            "role": "user", "content": [{"type": "text", "text": "What is this?"}, {"type": "image", "source": {
                "type": "base64", "media_type": "image/png", "data": data}}]}]}),
    }
    return {surface: (path, json.dumps(body).encode()) for surface, (path, body) in bodies.items()}


def parse_cost(server: ServerProcess, path: str, raw: bytes, megabytes: float) -> tuple[float, float]:
    """(ms per MB of the request, the slowest /llmsim/health answer meanwhile in ms)."""
    slowest = [0.0]
    done = threading.Event()

    def probe() -> None:
        with httpx.Client(timeout=300) as http:
            while not done.is_set():
                started = time.perf_counter()
                http.get(f"{server.url}/llmsim/health")
                slowest[0] = max(slowest[0], time.perf_counter() - started)
                time.sleep(0.01)

    prober = threading.Thread(target=probe)
    prober.start()
    started = time.perf_counter()
    answer = httpx.post(server.url + path, content=raw, headers={"content-type": "application/json"}, timeout=600)
    took = time.perf_counter() - started
    done.set()
    prober.join()
    if answer.status_code != 200:
        raise RuntimeError(f"{path}: {answer.status_code} {answer.text[:300]}")
    return took * 1000 / megabytes, slowest[0] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=4.0, help="each window")
    parser.add_argument("--rounds", type=int, default=3, help="windows per surface, alternating")
    parser.add_argument("--paced-clients", type=int, default=8, help="concurrent paced streams per surface")
    parser.add_argument("--paced-speed", type=float, default=0.5, help="pacing speed of the paced part")
    parser.add_argument("--image-mb", type=float, default=20.0, help="the size of the parse-cost part's image")
    # paced at speed 2, a stream's last after the window takes ~1 s, not 4 (a delta's gap, ~4 ms, still far above
    # a tick); the speed-0 windows a few dozen streams each
    smoke(parser, seconds=0.15, rounds=1, clients=4, paced_clients=2, paced_speed=2.0, image_mb=0.5)
    args = parse(parser)
    with scripted_server(ANSWER) as server:
        results = alternating(server, SURFACES, args.clients, args.seconds, args.rounds)
        paced_rows = paced(server, args.paced_clients, args.seconds, args.paced_speed)
        images = image_bodies(args.image_mb)
        costs: dict[str, list[tuple[float, float]]] = {surface: [] for surface in images}
        for _ in range(args.rounds):
            for surface, (path, raw) in images.items():
                costs[surface].append(parse_cost(server, path, raw, args.image_mb))
    print(f"speed-0 streams, {args.clients} clients, {args.rounds} x {args.seconds:g} s windows per surface, "
          f"one worker; {machine()}")
    rows = []
    for surface, windows in results.items():
        per_core = statistics.median(w[0] for w in windows)
        rate = statistics.median(w[1] for w in windows)
        rows.append([surface, f"{per_core:.0f}", f"{rate:.0f}"])
    print(table(["surface", "streams per core (per CPU-second)", "streams per second"], rows))
    ratio = statistics.median(w[0] for w in results["messages"]) / statistics.median(
        w[0] for w in results["responses"])
    print(f"ratio messages / responses: {ratio:.2f}x")
    print(goal("Messages streams per core within 10 % of Responses'", ratio, 0.9))
    print(f"\npaced streams of {PACED_MODEL} at speed {args.paced_speed:g}, {args.paced_clients} at once per surface: "
          "the median gap between text deltas against the profile's inter-token p50")
    print(table(["surface", "gaps", "median gap (ms)", "profile p50 (ms)", "measured / profile"], paced_rows))
    print(f"\none base64 image of {args.image_mb:g} MB per request, {args.rounds} rounds alternating: what a request "
          "costs per MB of its body, and the slowest /llmsim/health answer meanwhile")
    print(table(["surface", "ms per MB (median)", "slowest health (ms)"],
                [[surface, f"{statistics.median(c[0] for c in rounds):.0f}",
                  f"{max(c[1] for c in rounds):.0f}"] for surface, rounds in costs.items()]))
    cost = statistics.median(m[0] / r[0] for m, r in zip(costs["messages"], costs["responses"], strict=True))
    print(f"ratio messages / responses per MB: {cost:.2f}x")
    print(goal("Messages' parse cost per MB within 2x of Responses'", cost, 2.0, higher=False))
    slowest = max(c[1] for rounds in costs.values() for c in rounds)
    print(goal("the slowest /llmsim/health answer meanwhile", slowest, 100.0, unit=" ms", higher=False))


if __name__ == "__main__":
    main()
