"""`python -m bench.stores`: what the memory, SQLite and Redis stores cost, and what workers buy.

(a) Speed 0, non-streaming requests from closed-loop clients, on the memory, SQLite and Redis stores
    at 1, 2 and 4 workers: requests/s, p50/p99 latency, and Redis/memory throughput (goal: >= 0.85), with
    redis-server's socket reads per request (below 1: a worker's concurrent scripts share a write, pipelined).
    Then the Redis round trips each kind of request costs, counted in-process on the client's socket
    writes (a pipeline or a Lua script is one): one for a JSON answer nothing can intervene in (its admission
    goes with its stored response, llmsim/chaos/redis_state.py), two with rate limits.
(b) Realistic pacing (speed 1, a shipped model's profile), many open streams on the Redis store:
    SSE text deltas delivered per second and inter-token p99 at 1 and 4 workers
    (goal: 4 workers >= 1.7x one), with the CPU the servers, the load and redis-server took (a share of one
    core). The streams are more than four workers can pace on 2 cores (their inter-token p50 is above the
    profile's): with fewer, four workers deliver every delta on time and the ratio measures the load. The
    ceiling under the table is what the cores left to four workers allow at one worker's deltas per core.
    Then the same for the stack's floor, bench/bare.py, replaying one of these streams (paced by LLMSim's own
    writer, with no work per request): what four workers of this stack gain over one on this machine, for a
    stream that costs next to nothing. Then the most streams one and four workers pace on time (inter-token p50
    and p99 within 10 %).

Why (a) measures the way it does: the figure is the server's CPU per request, so the server's core must be
the bottleneck in every window, and each row prints where the CPU went (the server's processes, the load's
core, redis-server: a server near 1.0 and a load core with room left means the server limits). The load is
`wrk` (one thread, `--clients` connections, a Lua script POSTing the body): it takes ~5 % of a core where
bench/load.py's aiohttp clients (the fallback when wrk is missing, or with `--aiohttp`) take about half of one.
This machine's speed drifts by +-20 % within minutes (other work, the host), and a server of several workers
on one core swings by as much from window to window, so a worker count's servers (one per store) run side by
side, all warmed, and short windows go round them `--repeats` times in alternating order; a figure is the
median of its store's windows and the ratio the median of the ratios of windows taken next to each other.

Needs `redis-server` on PATH (Debian: apt-get install redis-server); it starts its own on a free port.
(a)'s server runs on `--server-cpu`, the load on `--client-cpu` and redis-server on `--redis-cpu` (by
default the load's: in a fleet Redis is a service of its own, not a cost on the server's cores). (b)'s
servers and redis-server run on any core, since four workers can only beat one with more than one; its
streams are kept open by bench/lazy_streams.py, which reads each once a `--poll` and counts the deltas it read,
and a sample of them is timed on raw sockets (bench/stream_load.py), which leaves the servers most of the machine;
`pacing` says how the windows alternate. The streams start over `--pacing-warmup` seconds and the window follows:
over 15 s a server is in its steady state by then. Over 5 s (480 new streams a second, then at once the window)
one worker's capacity on time was 600 streams (750-900 over 15 s), and a lone worker of a two-worker server (its
sibling stopped) delivered 0.925x a one-worker server's deltas per core: 0.99x once it accepted as a worker
of a one-worker server does (gunicorn has each worker of several accept one connection per turn of its event
loop, up to 100 with one worker), and 1.00x as it is with the 15 s warm-up.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import redis

if __package__ in (None, ""):  # `python bench/stores.py`: the repository's root on the path, as for `-m bench.stores`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import load, stream_load, wrk  # noqa: E402
from bench.common import (  # noqa: E402
    PROMPT,
    ROOT,
    core,
    core_busy,
    counts,
    cpu_seconds,
    load_on,
    machine,
    more_files,
    parse,
    place,
    quantile,
    smoke,
    table,
)
from bench.load import Plan, run  # noqa: E402
from bench.servers import BenchServer, bare, record, running  # noqa: E402
from llmsim.config import DEFAULT_PROFILES_DIR  # noqa: E402
from llmsim.testing import RedisServer, ServerProcess  # noqa: E402
from llmsim.timing.profiles import load_catalog  # noqa: E402


def _middle(measured: list[Any], field: str) -> float:
    return statistics.median(getattr(r, field) for r in measured)


def store_url(kind: str, redis_server: RedisServer, directory: str) -> str:
    if kind == "redis":
        redis.Redis.from_url(redis_server.url).flushall()
        return redis_server.url
    if kind == "sqlite":
        return f"sqlite:///{directory}/bench-{len(list(Path(directory).iterdir()))}.db"
    return "memory"


def warm(server: ServerProcess, body: dict[str, object], workers: int) -> None:
    """A few requests on every worker first: its caches and its Redis connection made before the windows. One
    client for them all: each `httpx.post` makes a client of its own, tens of ms of CPU for its TLS context."""
    with ThreadPoolExecutor(8 * workers) as pool, httpx.Client(timeout=120, limits=httpx.Limits(
            max_connections=8 * workers, max_keepalive_connections=0)) as client:
        list(pool.map(lambda _: client.post(f"{server.base_url}/responses", json={**body, "stream": False},
                                            headers={"X-LLMSim-Speed": "0"}), range(16 * workers)))


class Row(NamedTuple):
    """One measured window of (a): the load's figures, and where the CPU went in it."""

    rate: float  # answered (2xx) requests/s
    p50: float  # latency, ms
    p99: float
    errors: int
    server_cpu: float  # the server's master and workers, a share of one core: ~1.0 when it is the bottleneck
    load_core: float  # how busy the load's core was (the generator and, by default, redis-server): a share
    redis_cpu: float  # redis-server's share of one core
    redis_reads: float  # redis-server's socket reads per answered request: under 1 when scripts are pipelined


def aiohttp_load(url: str, body: dict[str, object], clients: int, window: float, processes: int,
                 headers: dict[str, str]) -> tuple[float, float, float, int]:
    """The same figures from bench/load.py's closed-loop aiohttp clients (when `wrk` is missing): they take many
    times wrk's CPU per request, so the load's core may limit before the server's does (see the load column)."""
    plan = Plan(url, body, headers, clients, warmup=0.0, window=window, stream=False)
    samples, _ = run(plan, processes=processes)
    done = [s for s in samples if s.end is not None]
    good = [s.latency_ms for s in done if s.ok]
    return len(good) / window, quantile(good, 0.5), quantile(good, 0.99), sum(not s.ok for s in done)


def window(server: ServerProcess, redis_server: RedisServer, body: dict[str, object], args: argparse.Namespace,
           directory: str, headers: dict[str, str]) -> Row:
    """One measured window against `server`, with the CPU its processes, redis-server and the load's core took
    in it (read when the load starts and when it ends), and redis-server's reads per request (the worker's
    scripts of one event-loop turn go in one write: llmsim/runtime/redis_pipe.py)."""
    assert redis_server.process is not None
    redis_pid, stats = redis_server.process.pid, redis.Redis.from_url(redis_server.url)
    reads = [stats.info("stats")["total_reads_processed"]]
    assert server.process is not None
    pid, url, use_wrk = server.process.pid, f"{server.base_url}/responses", wrk.available() and not args.aiohttp
    marks: list[tuple[float, ...]] = []
    start = 0.0 if use_wrk else load.START  # bench/load.py starts its clients START s in
    for delay in (start, start + args.window):
        timer = threading.Timer(delay, lambda: marks.append(
            (time.perf_counter(), cpu_seconds(pid), cpu_seconds(redis_pid), *core_busy(core(args.client_cpu)))))
        timer.daemon = True
        timer.start()
    if use_wrk:
        assert not headers, "bench/wrk.py sends no headers of its own"
        rate, p50, p99, errors, _ = wrk.post(url, body, args.clients, args.window, directory)
    else:
        rate, p50, p99, errors = aiohttp_load(url, body, args.clients, args.window, args.processes, headers)
    time.sleep(0.05)  # the last reading
    reads.append(stats.info("stats")["total_reads_processed"] - 1)  # less this INFO's own read
    (t0, server0, redis0, busy0, total0), (t1, server1, redis1, busy1, total1) = marks
    return Row(rate, p50, p99, errors, (server1 - server0) / (t1 - t0), (busy1 - busy0) / max(1, total1 - total0),
               (redis1 - redis0) / (t1 - t0), (reads[1] - reads[0]) / max(1.0, rate * args.window))


def throughput(args: argparse.Namespace, redis_server: RedisServer, directory: str, kept: Kept | None = None
               ) -> str:
    """Each worker count's servers (one per store) run side by side on the server's core, all warmed; the
    windows go round them `--repeats` times, in alternating order, and each figure is the median of its store's
    windows; the ratio is the median of the ratios of windows taken next to each other. `kept`: a smoke run's,
    whose Redis servers pace (b)'s streams after: they start at speed 1, and (a)'s requests ask for speed 0."""
    assert redis_server.process is not None
    rows = []
    body = {"model": args.model, "input": PROMPT}
    speed, headers = ("1", {"X-LLMSim-Speed": "0"}) if kept is not None else ("0", {})
    for workers in args.workers:
        servers = {kind: ServerProcess("--speed", speed, "--workers", str(workers), "--store",
                                       store_url(kind, redis_server, directory), startup_timeout=180)
                   for kind in args.stores}
        with contextlib.ExitStack() as own:
            (kept.stack if kept is not None else own).enter_context(running(*servers.values()))
            if kept is not None and "redis" in servers:
                kept.servers[workers] = servers["redis"]
            for server in servers.values():
                warm(server, body, workers)
                assert server.process is not None
                place(server.process.pid, args.server_cpu)
            runs: dict[str, list[Row]] = {kind: [] for kind in servers}
            for repeat in range(args.repeats):
                for kind in servers if repeat % 2 == 0 else reversed(servers):
                    runs[kind].append(window(servers[kind], redis_server, body, args, directory, headers))
                    row = runs[kind][-1]
                    print(f"  (a) {workers} {kind}: {row.rate:.0f} req/s, server {row.server_cpu:.2f}, "
                          f"load core {row.load_core:.2f}, redis {row.redis_cpu:.2f}, "
                          f"redis reads/req {row.redis_reads:.2f}",
                          flush=True)
        for kind, measured in runs.items():
            ratio = statistics.median(r.rate / m.rate for r, m in zip(measured, runs["memory"], strict=False))
            middle = functools.partial(_middle, measured)
            rows.append([kind, str(workers), f"{middle('rate'):.0f}", f"{min(r.rate for r in measured):.0f}-"
                         f"{max(r.rate for r in measured):.0f}", f"{middle('p50'):.1f}", f"{middle('p99'):.1f}",
                         str(sum(r.errors for r in measured)), f"{middle('server_cpu'):.2f}",
                         f"{middle('load_core'):.2f}", f"{middle('redis_cpu'):.2f}",
                         f"{middle('redis_reads'):.2f}" if kind == "redis" else "-", f"{ratio:.2f}"])
    return table(["store", "workers", "req/s", "range", "p50 ms", "p99 ms", "errors", "server CPU", "load core",
                  "redis CPU", "redis reads/req", "vs memory"], rows)


def round_trips(redis_server: RedisServer, count: int) -> str:
    """Redis round trips per request, by kind, through the app in this process: the client's commands and
    pipelines, and the scripts' own sends (llmsim/store/redis_client.py `Scripts`), over `count` requests of
    each kind."""
    from redis.connection import Connection

    from llmsim.app import create_app
    from llmsim.config import Settings
    from llmsim.store.redis_client import Scripts

    redis.Redis.from_url(redis_server.url).flushall()
    app = create_app(Settings(store=redis_server.url, speed=0))
    client = app.test_client()
    sent: Counter[str] = Counter()
    original = Connection.send_packed_command

    def counting(self: Connection, command: object, check_health: bool = True) -> None:
        sent["n"] += 1
        original(self, command, check_health)

    original_send = Scripts._send

    def counting_scripts(self: Scripts, commands: list[tuple[object, ...]]) -> list[object]:
        sent["n"] += 1
        return original_send(self, commands)

    first = client.post("/v1/responses", json={"model": "gpt-4o", "input": PROMPT}).get_json()["id"]
    requests = {
        "create (json)": lambda: client.post("/v1/responses", json={"model": "gpt-4o", "input": PROMPT}),
        "create (stream)": lambda: client.post("/v1/responses", json={"model": "gpt-4o", "input": PROMPT,
                                                                       "stream": True}).get_data(),
        "chat completion (json)": lambda: client.post("/v1/chat/completions", json={
            "model": "gpt-4o", "messages": [{"role": "user", "content": PROMPT}]}),
        "retrieve": lambda: client.get(f"/v1/responses/{first}"),
        "create (rpm + tpm limits)": lambda: client.post("/v1/responses", json={"model": "gpt-4o", "input": PROMPT},
                                                         headers={"Authorization": "Bearer sk-limited"}),
    }
    rows = []
    Connection.send_packed_command = counting  # type: ignore[method-assign,assignment]
    Scripts._send = counting_scripts  # type: ignore[method-assign]
    try:
        for name, call in requests.items():
            if "limits" in name:  # last: the limits stay
                client.put("/llmsim/admin/faults", json={"rate_limits": {"rpm": 100000, "tpm": 100000000}})
            call()  # scripts loaded, config current
            sent.clear()
            for _ in range(count):
                call()
            rows.append([name, f"{sent['n'] / count:.1f}"])
    finally:
        Connection.send_packed_command = original  # type: ignore[method-assign]
        Scripts._send = original_send  # type: ignore[method-assign]
    return table(["request", "Redis round trips"], rows)


def sampled_streams(server: ServerProcess | BenchServer, body: dict[str, object], args: argparse.Namespace,
                    directory: str) -> tuple[float, float, float, list[float]]:
    """`--streams` open streams: `--probe-streams` of them read by bench/stream_load.py, which times every delta,
    the rest kept open by bench/lazy_streams.py, which reads each socket once per `--poll` and counts the deltas
    it read in the window. Returns the deltas/s of all streams, the load's CPU (the streams' reader and the
    probe), the server's CPU and the probe's inter-token gaps."""
    assert server.process is not None
    body_file = Path(directory, "stream.json")
    body_file.write_text(json.dumps(body))
    start = load.START  # bench/stream_load.py's streams start START s in: the others too
    window = (start + args.pacing_warmup, start + args.pacing_warmup + args.pacing_window)
    # the lazy streams run a poll past the window: its last deltas are read (a second, as before, at the default)
    command = [sys.executable, "-m", "bench.lazy_streams", f"{server.base_url}/responses",
               str(body_file), str(args.streams - args.probe_streams), str(args.pacing_warmup),
               f"{window[1] + args.poll:g}", str(args.poll), str(window[0]), str(args.pacing_window)]
    lazy_load = subprocess.Popen(command, stdout=subprocess.PIPE, cwd=ROOT)
    marks: list[tuple[float, ...]] = []
    server_pid = server.process.pid

    def mark() -> None:
        marks.append((time.perf_counter(), cpu_seconds(lazy_load.pid), cpu_seconds(server_pid)))

    timers = [threading.Timer(delay, mark) for delay in window]
    for timer in timers:
        timer.start()
    plan = Plan(f"{server.base_url}/responses", body, {}, args.probe_streams, warmup=args.pacing_warmup,
                window=args.pacing_window, stream=True)
    samples, probe_cpu = stream_load.run(plan)  # starts in 1 s, as the other streams do
    lazy = json.loads(lazy_load.communicate()[0])
    for timer in timers:
        timer.join()
    (t0, load0, server0), (t1, load1, server1) = marks
    begin, end = plan.warmup, plan.warmup + plan.window
    probed = sum(begin <= t < end for s in samples for t in s.deltas)
    gaps = [g for s in samples for g in s.gaps_ms(begin, end)]
    return ((lazy["deltas"] + probed) / plan.window, (load1 - load0) / (t1 - t0) + probe_cpu,
            (server1 - server0) / (t1 - t0), gaps)


@contextlib.contextmanager
def paced_servers(worker_counts: tuple[int, ...], redis_server: RedisServer, body: dict[str, object],
                  kept: Kept | None = None) -> Iterator[dict[int, ServerProcess]]:
    """A server pacing at speed 1 on Redis per worker count, started together, warmed, free to use every core
    (this process, which they fork from, is on the load's). `kept`: a smoke run's, whose servers outlive the
    block and serve (b)'s capacity too, and which (a)'s Redis servers joined (a start of a server is seconds of
    a smoke run's time): those of its worker counts are not started again."""
    servers = {workers: ServerProcess("--speed", "1", "--workers", str(workers), "--store", redis_server.url,
                                      startup_timeout=180)
               for workers in worker_counts if kept is None or workers not in kept.servers}
    with contextlib.ExitStack() as own:
        (kept.stack if kept is not None else own).enter_context(running(*servers.values()))
        for workers, server in servers.items():
            warm(server, body, workers)  # by then every worker is forked (gunicorn spawns them a moment apart)
        if kept is not None:
            kept.servers.update(servers)
        servers = {workers: (servers if kept is None else kept.servers)[workers] for workers in worker_counts}
        for server in servers.values():
            assert server.process is not None
            place(server.process.pid, None)
        yield servers


class Kept(NamedTuple):
    """A smoke run's servers that pace (b)'s streams, by worker count ((a)'s Redis ones among them), and the stack
    that stops them, and (a)'s others, at its end."""

    servers: dict[int, ServerProcess]
    stack: contextlib.ExitStack


class Window(NamedTuple):
    """One window of (b): the deltas/s of all streams, the CPU the server, the load and redis-server took (a
    share of one core), and the probe's inter-token p50 and p99."""

    deltas: float
    server_cpu: float
    load_cpu: float
    redis_cpu: float
    p50: float
    p99: float


def alternate(servers: dict[int, ServerProcess] | dict[int, BenchServer], body: dict[str, object],
              args: argparse.Namespace, directory: str, redis_server: RedisServer) -> dict[int, list[Window]]:
    """Windows alternating between `servers` (by worker count, all warmed) `--pacing-repeats` times. Side by side,
    as the machine drifts by as much as the ratio's margin between runs."""
    assert redis_server.process is not None
    runs: dict[int, list[Window]] = {workers: [] for workers in servers}
    for repeat in range(args.pacing_repeats):
        for workers in servers if repeat % 2 == 0 else reversed(servers):
            redis_before, started = cpu_seconds(redis_server.process.pid), time.perf_counter()
            deltas, load_cpu, server_cpu, gaps = sampled_streams(servers[workers], body, args, directory)
            redis_cpu = (cpu_seconds(redis_server.process.pid) - redis_before) / (time.perf_counter() - started)
            runs[workers].append(Window(deltas, server_cpu, load_cpu, redis_cpu, quantile(gaps, 0.5),
                                        quantile(gaps, 0.99)))
            print(f"  (b) {workers} workers, {args.streams} streams: {deltas:.0f} deltas/s, server {server_cpu:.2f}, "
                  f"load {load_cpu:.2f}, redis {redis_cpu:.2f}", flush=True)
    return runs


def ratios(runs: dict[int, list[Window]], streams: int) -> tuple[list[list[str]], float]:
    """(b)'s rows: the medians of each worker count's windows, and the median ratio of windows taken next to
    each other; and four workers' ratio."""
    rows, found = [], {}
    for workers, measured in runs.items():
        found[workers] = statistics.median(w.deltas / one.deltas for w, one in zip(measured, runs[1], strict=False))
        m = Window(*(statistics.median(values) for values in zip(*measured, strict=False)))
        rows.append([str(workers), str(streams), f"{m.deltas:.0f}", f"{min(w.deltas for w in measured):.0f}-"
                     f"{max(w.deltas for w in measured):.0f}", f"{m.p50:.1f}", f"{m.p99:.1f}", f"{m.server_cpu:.2f}",
                     f"{m.load_cpu:.2f}", f"{m.redis_cpu:.2f}",
                     f"{m.deltas / m.server_cpu:.0f}" if m.server_cpu else "-",  # a short window: under a tick
                     f"{found[workers]:.2f}x"])
    return rows, found[4]


HEADERS = ["workers", "streams", "deltas/s", "range", "inter-token p50 ms", "p99 ms", "server CPU", "load CPU",
           "redis CPU", "deltas/s per server core", "vs 1 worker"]


def pacing(args: argparse.Namespace, redis_server: RedisServer, directory: str, kept: Kept | None = None) -> str:
    """One server of one and one of four workers side by side on Redis, both warmed, their windows alternating;
    then the same for bench/bare.py (`floor`). A figure is the median of its windows."""
    body = {"model": args.paced_model, "input": PROMPT, "stream": True}
    redis.Redis.from_url(redis_server.url).flushall()
    with paced_servers((1, 4), redis_server, body, kept) as servers:
        recorded = record(servers[1].base_url, args.paced_model)
        runs = alternate(servers, body, args, directory, redis_server)
    rows, ratio = ratios(runs, args.streams)
    # What four workers could deliver at best: every core the load and redis-server leave them, at one worker's
    # deltas per core (a saturated worker: its CPU ~1.00).
    left = statistics.median((os.cpu_count() or 1) - w.load_cpu - w.redis_cpu for w in runs[4])
    ceiling = left / statistics.median(w.server_cpu for w in runs[1])
    floor_rows, floor_ratio = floor(args, recorded, body, redis_server, directory)
    return table(HEADERS, rows) + (
        f"\nfour workers: {ratio:.2f}x one (goal: >= 1.7x); at one worker's deltas per core on the {left:.2f} cores "
        f"the load and redis-server leave them: {ceiling:.2f}x"
        f"\nbench/bare.py, the stack's floor (the same streams' recorded bytes, paced by LLMSim's writer, no LLMSim "
        f"work per request), {args.floor_streams} streams:\n" + table(HEADERS, floor_rows) +
        f"\nthe floor's four workers: {floor_ratio:.2f}x one: what this stack's workers gain on this machine")


def floor(args: argparse.Namespace, recorded: dict[str, object], body: dict[str, object], redis_server: RedisServer,
          directory: str) -> tuple[list[list[str]], float]:
    """bench/bare.py at one and four workers under the same load as `pacing`'s: what four workers gain over one
    when a stream costs only the stack's own work (gunicorn, gevent, the pacing timer and writer, the kernel's
    loopback) and the load's. More streams than LLMSim's, as each costs the floor far less; none touch Redis."""
    level = argparse.Namespace(**{**vars(args), "streams": args.floor_streams})
    servers = {workers: bare(recorded, workers, pace=args.paced_model) for workers in (1, 4)}
    with running(*servers.values()):
        for server in servers.values():
            assert server.process is not None
            place(server.process.pid, None)
        return ratios(alternate(servers, body, level, directory, redis_server), args.floor_streams)


def capacity(args: argparse.Namespace, redis_server: RedisServer, directory: str, kept: Kept | None = None) -> str:
    """The most streams one and four workers pace on time: inter-token p50 and p99 within 10 % of the profile's
    (as bench/run.py's knee), trying `--capacity-streams` in turn until a level fails. Deltas/s past saturation
    (`pacing`) favour a late server: a late stream's deltas fall due together and leave in one write."""
    body = {"model": args.paced_model, "input": PROMPT, "stream": True}
    timing = load_catalog([DEFAULT_PROFILES_DIR]).get(args.paced_model).timing  # type: ignore[union-attr]
    want = [timing.itl_ms.quantile(q) for q in (0.5, 0.99)]  # type: ignore[union-attr]
    redis.Redis.from_url(redis_server.url).flushall()
    rows, knees = [], {}
    for workers in (1, 4):
        knees[workers] = 0
        with paced_servers((workers,), redis_server, body, kept) as servers:
            server = servers[workers]
            for streams in args.capacity_streams:
                level = argparse.Namespace(**{**vars(args), "streams": streams})
                deltas, load_cpu, server_cpu, gaps = sampled_streams(server, body, level, directory)
                got = [quantile(gaps, 0.5), quantile(gaps, 0.99)]
                errors = [(g - w) / w * 100 for g, w in zip(got, want, strict=False)]
                on_time = all(abs(e) <= 10 for e in errors)
                rows.append([str(workers), str(streams), f"{deltas:.0f}", f"{got[0]:.1f} ({errors[0]:+.1f}%)",
                             f"{got[1]:.1f} ({errors[1]:+.1f}%)", f"{server_cpu:.2f}", f"{load_cpu:.2f}",
                             "yes" if on_time else "NO"])
                print("  (b) capacity:", " ".join(rows[-1]), flush=True)
                if not on_time:
                    break
                knees[workers] = streams
    ratio = knees[4] / knees[1] if knees[1] else float("nan")
    return table(["workers", "streams", "deltas/s", "inter-token p50 ms", "p99 ms", "server CPU", "load CPU",
                  "on time"], rows) + (
        f"\nprofile inter-token p50/p99: {want[0]:.1f}/{want[1]:.1f} ms; streams paced on time: one worker "
        f"{knees[1]}, four {knees[4]}: {ratio:.2f}x (goal: 4 workers >= 1.7x one)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["a", "b", "all"], default="all")
    parser.add_argument("--workers", type=counts, default=[1, 2, 4])
    parser.add_argument("--stores", type=lambda v: v.split(","), default=["memory", "redis", "sqlite"],
                        help="(a)'s stores, memory first")
    parser.add_argument("--clients", type=int, default=32, help="closed-loop clients (connections) of (a)")
    parser.add_argument("--repeats", type=int, default=5, help="windows per store and worker count in (a)")
    parser.add_argument("--aiohttp", action="store_true", help="(a)'s load from bench/load.py even with wrk")
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--window", type=float, default=3.0, help="seconds measured per window")
    parser.add_argument("--pacing-window", type=float, default=5.0, help="seconds measured per row of (b)")
    parser.add_argument("--paced-model", default="gpt-4o-mini", help="the shipped profile (b) paces")
    parser.add_argument("--streams", type=int, default=2400,
                        help="open streams of (b): more than four workers can pace (one paces 600-900), so it measures "
                             "what they deliver, with room for the streams that ended and wait for the next --poll")
    parser.add_argument("--floor-streams", type=int, default=3600,
                        help="open streams of (b)'s floor, bench/bare.py: more than its four workers can pace")
    parser.add_argument("--pacing-warmup", type=float, default=15.0,
                        help="seconds over which (b)'s streams start, before its window: its steady state")
    parser.add_argument("--processes", type=int, default=2, help="client processes of (a)")
    parser.add_argument("--pacing-repeats", type=int, default=5,
                        help="windows per worker count in (b) (one window may be off by 10 %%: the machine drifts)")
    parser.add_argument("--poll", type=float, default=1.0,
                        help="seconds between bench/lazy_streams.py's reads of a stream (a second's deltas fit in "
                             "its socket's buffer: the server writes each alike, read or not)")
    parser.add_argument("--capacity-streams", type=counts,
                        default=[300, 450, 600, 750, 900, 1050, 1200, 1350, 1500],
                        help="the stream counts (b)'s capacity tries, in turn, for one and four workers")
    parser.add_argument("--probe-streams", type=int, default=20,
                        help="streams of (b) read in Python beside the others, for the inter-token gaps (each read "
                             "as it comes: the load's costliest part)")
    parser.add_argument("--server-cpu", type=int, default=0, help="the core (a)'s server runs on (-1: any)")
    parser.add_argument("--client-cpu", type=int, default=1, help="the core the load runs on (-1: any)")
    parser.add_argument("--redis-cpu", type=int, default=None,
                        help="the core (a)'s redis-server runs on (default: the load's; -1: any)")
    parser.add_argument("--trip-requests", type=int, default=20,
                        help="requests of each kind whose Redis round trips (a) counts")
    parser.add_argument("--fsync", default="everysec", choices=["always", "everysec"],
                        help="Redis' appendfsync: always loses nothing acknowledged, everysec at most a second")
    smoke(parser, workers=[1], clients=4, repeats=1, aiohttp=True, window=0.5, pacing_window=0.5, streams=40,
          floor_streams=40, pacing_warmup=0.3, processes=1, pacing_repeats=1, poll=0.2, capacity_streams=[20],
          probe_streams=5, server_cpu=-1, client_cpu=-1, trip_requests=3)
    args = parse(parser)
    args.server_cpu = core(args.server_cpu)
    args.redis_cpu = core(args.client_cpu if args.redis_cpu is None else args.redis_cpu)
    load_on(core(args.client_cpu))  # the load processes fork from this one
    more_files()
    if args.smoke:
        load.START = 0.3  # one client process: it forks in far less
    out = [f"{machine()} at the start; Redis: appendonly, appendfsync {args.fsync}; (a) on cores: server "
           f"{args.server_cpu}, redis-server {args.redis_cpu}, load {args.client_cpu} (None: any)"]
    # The servers a smoke run keeps (stopped first, before Redis and the SQLite files' folder): (a)'s Redis server
    # of one worker paces (b)'s streams after, and (b)'s servers serve its capacity too.
    with RedisServer(fsync=args.fsync) as redis_server, tempfile.TemporaryDirectory() as directory, \
            contextlib.ExitStack() as stack:
        assert redis_server.process is not None
        kept = Kept({}, stack) if args.smoke else None
        if args.part in ("a", "all"):
            place(redis_server.process.pid, args.redis_cpu)
            out.append("(a) speed 0, JSON requests: stores x workers (goal: redis >= 0.85 of memory)\n"
                       + throughput(args, redis_server, directory, kept))
            out.append("(a) Redis round trips per request\n" + round_trips(redis_server, args.trip_requests))
        if args.part in ("b", "all"):
            place(redis_server.process.pid, None)
            out.append(f"(b) speed 1, {args.streams} streams of {args.paced_model} on Redis "
                       "(goal: 4 workers >= 1.7x one)\n" + pacing(args, redis_server, directory, kept))
            out.append(f"(b) speed 1, the most {args.paced_model} streams paced on time on Redis\n"
                       + capacity(args, redis_server, directory, kept))
    out.append(f"{machine()} at the end")
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
