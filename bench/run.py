"""`python -m bench.run`: LLMSim's overhead at speed 0, its timing fidelity, and memory, against issue 14's goals.

(a) Throughput and p50/p99 latency at speed 0, non-streaming and streaming, for 1/16/64/256
    closed-loop clients; the same against a bare WSGI app on the same gunicorn + gevent server
    replaying LLMSim's recorded bytes (bench/bare.py; LLMSim is seeded, so it makes that same answer each
    time). The ratio is LLMSim's own cost when both servers' CPU (printed, over the measured window:
    ~100 % is saturated) is the limit, not the load: the load is `wrk` (bench/wrk.py; bench/load.py's
    Python clients without it or with `--aiohttp`, which need most of a core to keep bare.py busy), and
    windows alternate between the two servers.
    Goal, one worker, 16 clients: JSON >= 0.5x and streaming >= 1.0x bare. For JSON, a third server gives the
    floor: LLMSim's own app (Flask and its hooks) answering the recorded JSON with none of the answer's work
    (bench/bare.py --floor), and Flask alone answering it (--flask): the most any JSON answer can reach on this
    stack.
(b) Timing fidelity at speed 1: measured TTFT and inter-token gaps (p50/p95/p99) against the
    quantiles the model's profile configures, at 1, 100 and 1,000 concurrent streams, on the default store.
(c) The knee at a real model's pace (gpt-4o): the most concurrent streams one worker serves with
    inter-token p50 and p99 within 10 % of the profile, on the server as a user gets it (the default store:
    each stream's response is stored), trying `--knee-streams` in turn until a level misses, so the knee is
    found, not capped at the last level, and `--past-knee` levels after it. Within 10 %: the gaps' p50, p95 and p99
    and the TTFT's p50. No stream is queued (`--max-num-seqs` far above the levels). Goal: >= 500.
(e) Overload: twice the knee's streams at once against a worker that runs the knee's (`--max-num-seqs`) and queues
    the rest, one that runs the default --max-num-seqs (256) and queues the rest, and one that runs them all: the
    share of streams on time (their own median gap within 10 % of the profile's), the queue's length
    (vllm:num_requests_waiting), the gaps and the TTFT (which includes the wait). A stream's own median of ~100
    gaps drawn from the profile strays past 10 % by chance alone (a stream of 60 gaps in 1 of 4), so the share is
    also given for a perfect pacer: the same streams' gap counts drawn from the profile. Goal, at the default:
    >= 90 % on time with the queue, of what a perfect pacer's streams of those lengths reach (at the knee's own
    limit a worker is at its edge by definition: printed beside).
(f) CPU per delta at 10, 100 and 1,000 open streams (`--cpu-streams`), kept open by bench/lazy_streams.py: the
    pacing's cost does not grow with the streams (issue 45: 800 waiting streams once cost 5-7x per delta). Goal:
    the most streams' cost within 1.25x of the fewest's; the spread (the most over the least) is printed beside:
    with few streams each wake of the pacing timer serves one delta, with many it serves dozens.
(d) Memory per stored response (goal <= 16 KB for a ~100-token answer) and a 50-turn
    previous_response_id chain's cost per turn, first turns against last, in this process.

The load runs in separate client processes. The server runs on `--server-cpu` and the
load on `--client-cpu` (different cores); on a busy machine the figures are the machine's as much as
LLMSim's, so compare ratios taken in one run and note the machine's load (printed).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx

if __package__ in (None, ""):  # `python bench/run.py`: the repository's root on the path, as for `-m bench.run`
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import load, wrk  # noqa: E402
from bench.common import (  # noqa: E402
    PROMPT,
    ROOT,
    CpuMeter,
    core,
    counts,
    cpu_seconds,
    goal,
    load_on,
    machine,
    more_files,
    parse,
    pin,
    quantile,
    smoke,
    table,
)
from bench.load import Plan, Sample, measure, run  # noqa: E402
from bench.servers import SEED, bare, record, running  # noqa: E402
from llmsim.config import DEFAULT_PROFILES_DIR, Settings  # noqa: E402
from llmsim.testing import ServerProcess  # noqa: E402
from llmsim.timing.profiles import load_catalog  # noqa: E402


def _paired_ratio(ours: list[Any], theirs: list[Any]) -> float:
    """The median of the windows' ratios, each taken against the window run beside it."""
    return statistics.median(f[0] / b[0] for f, b in zip(ours, theirs, strict=False))


def _window(url: str, pid: int, body: dict[str, object], clients: int, stream: bool, args: argparse.Namespace,
            directory: str) -> list[float]:
    """One measured window: req/s, p50 and p99 ms, errors, the server's and the load's CPU (shares of a core)."""
    if wrk.available() and not args.aiohttp:
        before, started = cpu_seconds(pid), time.perf_counter()
        result = wrk.post(url, body, clients, args.overhead_window, directory)
        busy = (cpu_seconds(pid) - before) / (time.perf_counter() - started)
        return [result.rate, result.p50, result.p99, result.errors, busy, result.cpu]
    plan = Plan(url, body, {}, clients, warmup=args.overhead_warmup, window=args.overhead_window, stream=stream)
    server = CpuMeter(pid, load.START + plan.warmup, plan.window)  # load.run starts its clock START s in
    generator = CpuMeter(os.getpid(), load.START + plan.warmup, plan.window)  # the client processes
    samples, _ = run(plan, processes=min(args.processes, clients))
    done = [s for s in samples if s.end is not None and plan.warmup <= s.end]
    good = [s.latency_ms for s in done if s.ok and s.start >= plan.warmup]
    return [sum(s.ok for s in done) / args.overhead_window, quantile(good, 0.5), quantile(good, 0.99),
            sum(not s.ok for s in done), server.share(), generator.share()]


def overhead_server(args: argparse.Namespace) -> ServerProcess:
    """(a)'s LLMSim, seeded, so that it answers every request with the answer bare.py replays: unseeded, each
    answer's length is drawn, and the one recorded for bare.py moved the streaming ratio by half between runs of
    the same code."""
    return ServerProcess("--speed", "0", "--workers", str(args.workers), "--store-max-entries", "1000",
                         "--seed", str(SEED))


def overhead(args: argparse.Namespace, shared: ServerProcess | None = None) -> str:
    """LLMSim and bare.py side by side on the server's core; `--repeats` windows alternate between them, each
    figure is the median of its windows and the ratio the median of the ratios of windows taken next to each
    other: this machine drifts by more than the margins measured here. `shared`: a started overhead_server (the
    smoke run's, which (c) uses after)."""
    rows, goals, floors = [], [], []
    with (contextlib.nullcontext(shared) if shared else overhead_server(args)) as llmsim, \
            tempfile.TemporaryDirectory() as directory:
        recorded = record(llmsim.base_url, args.overhead_model)
        others = [bare(recorded, args.workers, floor=floor) for floor in (None, "--floor", "--flask")]
        with running(*others):
            assert llmsim.process is not None
            servers = [(f"{llmsim.base_url}/responses", llmsim.process.pid),
                       *((f"{other.base_url}/responses", other.process.pid) for other in others if other.process)]
            for _, pid in servers:
                pin(pid, args.server_cpu)
            for stream in (False, True):
                body = {"model": args.overhead_model, "input": PROMPT, "stream": stream}
                for clients in args.clients:
                    sides = [0, 1] if stream else [0, 1, 2, 3]  # the floors answer JSON only
                    windows: list[list[list[float]]] = [[], [], [], []]
                    for repeat in range(args.repeats):
                        for side in sides if repeat % 2 == 0 else sides[::-1]:
                            windows[side].append(_window(*servers[side], body, clients, stream, args, directory))
                    pairs = zip(windows[0], windows[1], strict=False)
                    ratios = [ours[0] / theirs[0] for ours, theirs in pairs if theirs[0]]
                    ratio = statistics.median(ratios) if ratios else float("nan")
                    cells = ["stream" if stream else "json", str(clients)]
                    for measured in windows[:2]:
                        middle = [statistics.median(w[i] for w in measured) for i in range(6)]
                        cells += [f"{middle[0]:.0f}", f"{middle[1]:.1f}", f"{middle[2]:.1f}",
                                  str(sum(int(w[3]) for w in measured)), f"{middle[4]:.0%} / {middle[5]:.0%}"]
                    cells.append(f"{ratio:.2f}x")
                    rows.append(cells)
                    print("  (a)", " ".join(cells), flush=True)
                    if clients == 16:
                        goals.append(goal(f"{'streaming' if stream else 'JSON'} llmsim/bare at 16 clients",
                                          ratio, 1.0 if stream else 0.5))
                    if not stream:
                        floors.append(f"{clients} clients: " + ", ".join(
                            f"{name} {statistics.median(w[0] for w in windows[side]):.0f} req/s = "
                            f"{_paired_ratio(windows[side], windows[1]):.2f}x bare"
                            for side, name in ((2, "LLMSim's app"), (3, "Flask alone"))))
    generator = "wrk" if wrk.available() and not args.aiohttp else "bench/load.py"
    return f"load: {generator}, {args.repeats} windows of {args.overhead_window:g} s each, medians\n" + table(
        ["mode", "clients", "llmsim req/s", "p50 ms", "p99 ms", "errors", "CPU server/load", "bare req/s", "p50 ms",
         "p99 ms", "errors", "CPU server/load", "llmsim/bare"], rows) + "\n" + "\n".join(goals) + (
        "\n  JSON's floor: the recorded JSON answered by LLMSim's app (Flask and its hooks) from its create view, "
        "with none of the answer's work, and by Flask alone (one view, no hooks); no JSON answer made on this stack "
        "can go past them.\n  " + "\n  ".join(floors))


def fidelity(args: argparse.Namespace, model: str, levels: list[int], until_missed: bool = False,
             shared: ServerProcess | None = None) -> tuple[str, int]:
    """The table, and the knee: the most streams with inter-token p50 and p99 within 10 %. The server is the one a
    user starts (its default store, which keeps every response). `until_missed`: stop after the first level that
    misses (the knee is below it). `shared`: a started server at speed 0 instead (the smoke run's, (a)'s), the
    streams paced by the X-LLMSim-Speed header."""
    dirs = [DEFAULT_PROFILES_DIR, *args.profiles_dir]
    timing = load_catalog(dirs).resolve(model).timing
    assert timing is not None, f"{model} has no timing"
    flags = [arg for d in args.profiles_dir for arg in ("--profiles-dir", str(d))]
    headers = {"X-LLMSim-Speed": "1"} if shared else {}
    with (contextlib.nullcontext(shared) if shared else
          ServerProcess("--speed", "1", "--workers", str(args.workers), "--max-num-seqs", str(NO_LIMIT), *flags)
          ) as server:
        assert server.process is not None
        pin(server.process.pid, args.server_cpu)
        body = {"model": model, "input": PROMPT, "stream": True, "text": {"verbosity": args.verbosity}}
        probe = httpx.post(f"{server.base_url}/responses", json={**body, "stream": False},
                           headers={"X-LLMSim-Speed": "0"}, timeout=60).json()
        prefill_ms = 1000 * probe["usage"]["input_tokens"] / timing.prefill_tokens_per_s
        rows, knee = _levels(args, f"{server.base_url}/responses", server.process.pid, body, levels, timing,
                             prefill_ms, "", until_missed, headers)
        if args.knee_bare and model == args.knee_model:  # the same streams against the stack's floor
            with bare(record(server.base_url, model), args.workers, pace=model) as floor:
                assert floor.process is not None
                pin(floor.process.pid, args.server_cpu)
                rows += _levels(args, f"{floor.base_url}/responses", floor.process.pid, body, levels, timing,
                                prefill_ms, "bare ", until_missed)[0]
    return table(["streams", "open min/mean", "requests", "tokens/s", "CPU server/load", "server µs/token", "metric",
                  "n", "configured p50/p95/p99 ms",
                  "measured p50/p95/p99 ms", "error p50/p95/p99", "within 10%"], rows), knee


NO_LIMIT = 1_000_000  # --max-num-seqs for the knee search: every stream paced at once, none queued


def overload(args: argparse.Namespace, knee: int) -> str:
    """(e) 2x the knee's streams at once against a worker that runs the knee's (`--max-num-seqs`) and queues the rest,
    one that runs the default --max-num-seqs (as a user gets it, when below the knee's), and one that runs them all:
    the share of streams on time, the queue, the admitted streams' gaps. The goal is judged on the default's row:
    at the knee the worker is at the edge by definition (its gaps' p50 is within 10 %, on ~all of a core), and what
    the queue costs on top of it tips it over."""
    seqs = args.overload_seqs or knee or 100
    streams = 2 * seqs
    default = Settings().max_num_seqs
    dirs = [DEFAULT_PROFILES_DIR, *args.profiles_dir]
    timing = load_catalog(dirs).resolve(args.knee_model).timing
    assert timing is not None
    body = {"model": args.knee_model, "input": PROMPT, "stream": True, "text": {"verbosity": args.verbosity}}
    limits = [seqs, *([default] if default < seqs else []), NO_LIMIT]
    rows = []
    for limit in limits:
        with ServerProcess("--speed", "1", "--max-num-seqs", str(limit), "--max-queue", str(NO_LIMIT)) as server:
            assert server.process is not None
            pin(server.process.pid, args.server_cpu)
            plan = Plan(f"{server.base_url}/responses", body, {}, streams, warmup=args.warmup, window=args.window,
                        stream=True, client=args.stream_client)
            server_cpu = CpuMeter(server.process.pid, load.START + plan.warmup, plan.window)
            with QueueWatch(server.url, load.START + plan.warmup, plan.window) as queue:
                samples, _, load_cpu = measure(plan, processes=min(args.processes, streams))
            rows.append(_overload_row("all" if limit == NO_LIMIT else limit, samples, timing, plan, queue,
                                      f"{server_cpu.share():.0%} / {load_cpu:.0%}"))
    want = timing.itl_ms.quantile(0.5)
    shares = [(float(row[3].rstrip("%")), float(row[4].rstrip("%"))) for row in rows]
    (queued, perfect), (unqueued, _) = shares[-2], shares[-1]  # the default's row, else the knee's
    judged = limits[-2]
    at_knee = (f"  at the knee's --max-num-seqs ({seqs}): {100 * shares[0][0] / max(shares[0][1], 0.1):.0f} % of a "
               "perfect pacer's on time\n" if judged != seqs else "")
    return (table(["streams", "running at most", "streams ended", "on time", "a perfect pacer's", "queue mean/max",
                   "CPU server/load", "gaps p50/p95/p99 ms (error)", "TTFT p50/p99 ms"], rows) +
            f"\n  on time: a stream whose own median gap is within 10 % of the profile's p50 ({want:.1f} ms); "
            "a perfect pacer's: the same streams' gap counts drawn from the profile\n" + at_knee +
            goal(f"streams on time at 2x the knee ({streams}), queued past {judged}, of a perfect pacer's",
                 100 * queued / max(perfect, 0.1), 90, "%") + "\n" +
            goal("on-time share, queued over all running at once", queued / max(unqueued, 0.1), 1.0))


def cpu_per_delta(args: argparse.Namespace) -> str:
    """(f) The server's CPU per streamed delta at each of `--cpu-streams` open streams of gpt-4o (none queued), the
    streams kept by bench/lazy_streams.py (each socket read once a second: a load of a tenth of a core)."""
    rows, per_delta = [], {}
    with (tempfile.TemporaryDirectory(prefix="llmsim-cpd-") as folder,
          ServerProcess("--speed", "1", "--max-num-seqs", str(NO_LIMIT)) as server):
        body_file = Path(folder) / "stream.json"
        body_file.write_text(json.dumps({"model": args.knee_model, "input": PROMPT, "stream": True,
                                         "text": {"verbosity": args.verbosity}}))
        assert server.process is not None
        pin(server.process.pid, args.server_cpu)
        for streams in args.cpu_streams:
            start = load.START
            window = (start + args.warmup, start + args.warmup + args.window)
            lazy = subprocess.Popen([sys.executable, "-m", "bench.lazy_streams", f"{server.base_url}/responses",
                                     str(body_file), str(streams), str(args.warmup), f"{window[1] + 1:g}", "1",
                                     str(window[0]), str(args.window)], stdout=subprocess.PIPE, cwd=ROOT)
            server_cpu = CpuMeter(server.process.pid, window[0], args.window)
            out, _ = lazy.communicate(timeout=window[1] + 120)
            deltas = json.loads(out)["deltas"]
            spent = server_cpu.share() * args.window
            per_delta[streams] = spent / max(1, deltas) * 1e6
            rows.append([str(streams), f"{deltas / args.window:.0f}", f"{server_cpu.share():.0%}",
                         f"{per_delta[streams]:.1f}"])
    fewest, most = per_delta[min(per_delta)], per_delta[max(per_delta)]
    low, high = min(per_delta.values()), max(per_delta.values())
    return (table(["open streams", "deltas/s", "server CPU", "server µs/delta"], rows) + "\n" +
            goal(f"CPU per delta at {max(per_delta)} streams over at {min(per_delta)}", most / fewest, 1.25,
                 higher=False) + f"\n  spread of CPU per delta, the most over the least: {high / low:.2f}x")


class QueueWatch:
    """`vllm:num_requests_waiting` (summed over models) read every half second in the measured window."""

    def __init__(self, url: str, start: float, window: float) -> None:
        self.url, self.start, self.window = url, start, window
        self.values: list[float] = []
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        time.sleep(self.start)
        end = time.monotonic() + self.window
        while time.monotonic() < end:
            try:
                text = httpx.get(f"{self.url}/metrics", timeout=5).text
            except httpx.HTTPError:
                continue
            self.values.append(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                                   if line.startswith("vllm:num_requests_waiting{")))
            time.sleep(0.5)

    def __enter__(self) -> QueueWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._thread.join(timeout=self.start + self.window + 10)


def _overload_row(running: object, samples: list[Sample], timing: Any, plan: Plan, queue: QueueWatch,
                  cpu: str) -> list[str]:
    begin, end = plan.warmup, plan.warmup + plan.window
    want = timing.itl_ms.quantile(0.5)
    ended = [s for s in samples if s.end is not None and begin <= s.end <= end and s.ok]
    on_time = [s for s in ended if len(s.deltas) > 2 and abs(statistics.median(s.gaps_ms(0, end)) - want) <= want / 10]
    draws = random.Random(SEED)  # a perfect pacer: each stream's gaps drawn from the profile, as many as it had
    perfect = [s for s in ended if len(s.deltas) > 2 and
               abs(statistics.median(timing.itl_ms.samples(draws, len(s.gaps_ms(0, end)))) - want) <= want / 10]
    gaps = [g for s in samples for g in s.gaps_ms(begin, end)]
    wanted = [timing.itl_ms.quantile(q) for q in (0.5, 0.95, 0.99)]
    got = [quantile(gaps, q) for q in (0.5, 0.95, 0.99)]
    ttfts = [(s.ttft - s.start) * 1000 for s in samples if s.start >= begin and s.ttft is not None and s.ttft <= end]
    waiting = queue.values or [0.0]
    return [str(plan.clients), str(running), str(len(ended)), f"{len(on_time) / max(1, len(ended)):.0%}",
            f"{len(perfect) / max(1, len(ended)):.0%}", f"{statistics.mean(waiting):.0f}/{max(waiting):.0f}", cpu,
            "/".join(f"{g:.1f}" for g in got) + " (" + "/".join(f"{(g - w) / w:+.0%}" for g, w in zip(got, wanted,
                                                                                               strict=True)) + ")",
            f"{quantile(ttfts, 0.5):.0f}/{quantile(ttfts, 0.99):.0f}" if ttfts else "-"]


def _levels(args: argparse.Namespace, url: str, pid: int, body: dict[str, object], levels: list[int],
            timing: object, prefill_ms: float, label: str, until_missed: bool = False,
            headers: dict[str, str] | None = None) -> tuple[list[list[str]], int]:
    """Each level's rows (streams labelled with `label`), and the knee: the most streams within 10 % below the first
    level that misses; `until_missed`: no more than `--past-knee` levels after that one (they show the fall past the
    knee). `headers`: sent with every stream."""
    rows, knee, missed = [], 0, 0
    for streams in levels:
        window = args.window if streams > 1 else args.window * 2
        plan = Plan(url, body, headers or {}, streams, warmup=args.warmup, window=window, stream=True,
                    client=args.stream_client)
        server_cpu = CpuMeter(pid, load.START + plan.warmup, plan.window)  # measure() starts its clock START s in
        samples, open_streams, load_cpu = measure(plan, processes=min(args.processes, streams))
        level = fidelity_rows(streams, samples, open_streams, timing, prefill_ms, plan)
        per_token = server_cpu.share() / max(1.0, float(level[0][3])) * 1e6  # the server's CPU per streamed token
        for row in level:
            row[0] = label + row[0]
            row.insert(4, f"{server_cpu.share():.0%} / {load_cpu:.0%}")
            row.insert(5, f"{per_token:.0f}")
        rows += level
        if all(row[-1] == "yes" for row in level):  # gaps p50/p95/p99 and TTFT p50 within 10 %
            knee = max(knee, streams) if not missed else knee
        else:
            missed += 1
        print(f"  {label}{url}:", streams, "streams done", flush=True)
        if until_missed and missed > args.past_knee:
            break
    return rows, knee


def in_process(args: argparse.Namespace) -> str:
    """CPU per request through the WSGI app in this process (no sockets, no gunicorn): the app's own cost. The
    seeds cycle, so each run makes the same answers."""
    from llmsim.app import create_app

    client = create_app(Settings(speed=0, store_max_entries=1000)).test_client()
    lines = []
    for stream in (False, True):
        body = {"model": args.overhead_model, "input": PROMPT, "stream": stream}
        for rounds in (min(100, args.in_process_requests), args.in_process_requests):  # the first warms the caches
            started = time.process_time()
            for i in range(rounds):
                client.post("/v1/responses", json=body, headers={"X-LLMSim-Seed": str(i % 64)}).get_data()
            spent = (time.process_time() - started) / rounds
        lines.append(f"  in process: {'stream' if stream else 'JSON'} {spent * 1000:.2f} ms CPU per request")
    return "\n".join(lines)


def memory(args: argparse.Namespace) -> str:
    """Bytes a stored response holds, and a long chain's cost per turn, measured in this process."""
    from llmsim.app import create_app

    client = create_app(Settings(speed=0, store_max_entries=100_000)).test_client()
    body = {"model": args.overhead_model, "input": PROMPT, "max_output_tokens": 4096}
    for _ in range(20):
        client.post("/v1/responses", json=body)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tokens = sum(client.post("/v1/responses", json=body).get_json()["usage"]["output_tokens"]
                 for _ in range(args.memory_responses))
    gc.collect()
    per_response = (tracemalloc.get_traced_memory()[0] - before) / args.memory_responses
    tracemalloc.stop()
    turns, previous = [], None
    for _ in range(50):
        started = time.process_time()
        answer = client.post("/v1/responses", json={"model": "gpt-4o", "input": PROMPT, "max_output_tokens": 200,
                                                    **({"previous_response_id": previous} if previous else {})})
        turns.append(1000 * (time.process_time() - started))
        previous = answer.get_json()["id"]
    first, last = sum(turns[1:6]) / 5, sum(turns[-5:]) / 5
    return "\n".join([
        f"  stored responses: {per_response / 1024:.1f} KiB each (answers of {tokens / args.memory_responses:.0f} "
        "output tokens on average)",
        f"  50-turn chain: turns 2-6 take {first:.2f} ms CPU each, turns 46-50 {last:.2f} ms ({last / first:.1f}x)",
        goal("memory per stored response", per_response / 1024, 16, " KiB", higher=False)])


def fidelity_rows(streams: int, samples: list[Sample], open_streams: list[int], timing: object,
                  prefill_ms: float, plan: Plan) -> list[list[str]]:
    """Requests that started in the window give TTFTs; every gap that ended in the window counts."""
    begin, end = plan.warmup, plan.warmup + plan.window
    started = [s for s in samples if s.start >= begin]
    failed = sum(1 for s in started if s.end is not None and not s.ok)
    measured: dict[str, list[float]] = {
        "TTFT": [(s.ttft - s.start) * 1000 for s in started if s.ttft is not None and s.ttft <= end],
                "inter-token": [g for s in samples for g in s.gaps_ms(begin, end)]}
    configured = {"TTFT": lambda q: timing.ttft_ms.quantile(q) + prefill_ms,  # type: ignore[attr-defined]
                  "inter-token": timing.itl_ms.quantile}  # type: ignore[attr-defined]
    rows = []
    for metric, values in measured.items():
        want = [configured[metric](q) for q in (0.5, 0.95, 0.99)]
        got = [quantile(values, q) for q in (0.5, 0.95, 0.99)]
        errors = [(g - w) / w * 100 for g, w in zip(got, want, strict=False)]
        checked = errors if metric == "inter-token" else errors[:1]  # gaps: p50, p95, p99; TTFT: p50
        within = "n<100" if len(values) < 100 else "yes" if all(abs(e) <= 10 for e in checked) else "NO"
        mean_open = sum(open_streams) / max(1, len(open_streams))
        rows.append([str(streams), f"{min(open_streams, default=0)}/{mean_open:.0f}",
                     f"{len(started)} ({failed} failed)", f"{len(measured['inter-token']) / plan.window:.0f}",
                     metric, str(len(values)),
                     "/".join(f"{w:.1f}" for w in want), "/".join(f"{g:.1f}" for g in got),
                     "/".join(f"{e:+.1f}%" for e in errors), within])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", default="all", help="the parts to run, comma-separated (a,b,c,d,e,f), or all")
    parser.add_argument("--clients", type=counts, default=[1, 16, 64, 256])
    parser.add_argument("--streams", type=counts, default=[1, 100, 1000])
    parser.add_argument("--model", default="bench-model", help="the paced model of part (b)")
    parser.add_argument("--profiles-dir", type=Path, action="append", default=[ROOT / "bench" / "profiles"])
    parser.add_argument("--verbosity", default="medium", help="text.verbosity of part (b): how long each stream is")
    parser.add_argument("--overhead-model", default="gpt-4o-mini")
    parser.add_argument("--overhead-window", type=float, default=4.0, help="seconds measured per window of (a)")
    parser.add_argument("--overhead-warmup", type=float, default=1.0,
                        help="seconds over which (a)'s clients start, without wrk (bench/load.py)")
    parser.add_argument("--repeats", type=int, default=3, help="windows per server and row of (a)")
    parser.add_argument("--aiohttp", action="store_true", help="(a)'s load from bench/load.py even with wrk")
    parser.add_argument("--window", type=float, default=30.0, help="seconds measured per level of (b)")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds over which (b)'s streams start")
    parser.add_argument("--workers", type=int, default=1, help="LLMSim's gunicorn workers")
    parser.add_argument("--processes", type=int, default=2, help="client processes")
    parser.add_argument("--knee-model", default="gpt-4o", help="the real model of part (c)")
    parser.add_argument("--knee-streams", type=counts,
                        default=[100, 200, 300, 400, 500, 600, 800, 1000, 1200, 1400, 1600],
                        help="the stream counts part (c) tries, in turn, until one misses")
    parser.add_argument("--past-knee", type=int, default=2, help="(c): levels tried after the first that misses")
    parser.add_argument("--cpu-streams", type=counts, default=[10, 100, 1000],
                        help="(f): the open streams whose server CPU per delta is compared")
    parser.add_argument("--overload-seqs", type=int, default=0,
                        help="(e): the worker's --max-num-seqs, with twice as many streams (0: (c)'s knee, else 100)")
    parser.add_argument("--stream-client", choices=["raw", "aiohttp"], default="raw",
                        help="(b)/(c)'s stream reader: raw asyncio sockets (cheap) or aiohttp, to compare them")
    parser.add_argument("--knee-bare", action="store_true",
                        help="(c) also paces bench/bare.py's replayed frames: the stack's floor, no LLMSim work")
    parser.add_argument("--in-process-requests", type=int, default=2000, help="requests per mode of (a)'s in-process "
                        "figure")
    parser.add_argument("--memory-responses", type=int, default=300, help="responses stored in part (d)")
    parser.add_argument("--server-cpu", type=int, default=0, help="the core the servers run on (-1: any)")
    parser.add_argument("--client-cpu", type=int, default=1, help="the core the load runs on (-1: any)")
    # (b) is (c)'s code with another model and levels: the smoke run leaves it out
    parser.add_argument("--one-server", action="store_true",
                        help="(c) on (a)'s LLMSim server (speed 0, seeded, 1,000 stored responses), its streams paced "
                             "by the X-LLMSim-Speed header: one server start fewer (the smoke run)")
    smoke(parser, part="a,c,d,e,f", one_server=True, overload_seqs=5, cpu_streams=[2, 4], clients=[16], repeats=1,
          overhead_window=0.3, overhead_warmup=0.2,
          aiohttp=True, window=1.0, warmup=0.5, knee_streams=[10, 20], in_process_requests=20, memory_responses=20,
          processes=1, server_cpu=-1, client_cpu=-1)
    args = parse(parser)
    args.server_cpu = core(args.server_cpu)
    load_on(core(args.client_cpu))  # the load processes fork from this one
    more_files()
    parts = {"a", "b", "c", "d", "e", "f"} if args.part == "all" else set(args.part.split(","))
    if args.smoke:
        load.START = 0.3  # one client process: it forks in far less
    out = [f"machine at the start: {machine()}"]
    with contextlib.ExitStack() as stack:
        shared = stack.enter_context(overhead_server(args)) if args.one_server else None
        if "a" in parts:
            out.append("(a) speed 0: LLMSim against a bare endpoint on the same gunicorn+gevent server\n"
                       + overhead(args, shared) + "\n" + in_process(args))
        if "b" in parts:
            text, _ = fidelity(args, args.model, args.streams)
            out.append(f"(b) speed 1: timing fidelity of {args.model} (configured = the profile's quantiles; TTFT "
                       "adds the prompt's prefill time)\n" + text)
        knee = 0
        if "c" in parts:
            text, knee = fidelity(args, args.knee_model, args.knee_streams, until_missed=True, shared=shared)
            where = " (on (a)'s server, paced by X-LLMSim-Speed: --one-server)" if shared else ""
            out.append(f"(c) speed 1: the knee of {args.knee_model}, one worker{where}, none queued\n" + text + "\n" +
                       goal(f"streams within 10 % (knee among {args.knee_streams})", knee, 500, ""))
        if "e" in parts:
            out.append(f"(e) speed 1: overload, twice the knee's streams of {args.knee_model} at once, one worker\n" +
                       overload(args, knee))
        if "f" in parts:
            out.append(f"(f) speed 1: CPU per delta against open streams of {args.knee_model}, one worker\n" +
                       cpu_per_delta(args))
    if "d" in parts:
        out.append("(d) memory and long chains\n" + memory(args))
    out.append(f"machine at the end: {machine()}")
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
