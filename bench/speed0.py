"""`python -m bench.speed0`: speed-0 requests per core of this tree against another commit's (issue 45's hot path).

Both servers run side by side, seeded, on `--server-cpu`, the load (`wrk`, else bench/load.py) on `--client-cpu`;
`--repeats` windows alternate between them for JSON and for streams. A figure is requests/s over the server's own
CPU in its window (requests per core: what a loaded machine's share of a core does not change), and the ratio the
median of the ratios of windows taken next to each other. The two answers are compared first: the same seeded
bytes, less ids and times. Goal: >= 1.5x on both against the commit this work started from.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

if __package__ in (None, ""):  # `python bench/speed0.py`: the repository's root on the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import wrk  # noqa: E402
from bench.common import PROMPT, ROOT, core, goal, load_on, machine, parse, pin, smoke, table  # noqa: E402
from bench.servers import SEED, running  # noqa: E402
from llmsim.testing import ServerProcess  # noqa: E402

STARTED_FROM = "2a559ce"  # the commit issue 45's work started from
VARYING = re.compile(rb'"(?:resp|msg|rs|fc|chatcmpl|call)_[0-9a-f]+"|"(?:created_at|completed_at|created)": ?\d+'
                     rb'(?:\.\d+)?|"(?:id|obfuscation)": ?"[^"]*"')


def exported(commit: str, into: str) -> str:
    """`commit`'s llmsim package (and the profiles its link points at) unpacked in `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "llmsim", "profiles"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return into


def _answers(url: str) -> tuple[bytes, bytes]:
    headers = {"X-LLMSim-Seed": str(SEED)}
    body = {"model": "gpt-4o-mini", "input": PROMPT}
    plain = httpx.post(f"{url}/responses", json=body, headers=headers, timeout=60).content
    streamed = httpx.post(f"{url}/responses", json={**body, "stream": True}, headers=headers, timeout=60).content
    return VARYING.sub(b"_", plain), VARYING.sub(b"_", streamed)


def window(url: str, pid: int, stream: bool, args: argparse.Namespace, folder: str) -> float:
    """Requests per second of the server's CPU over one window."""
    from bench.common import cpu_seconds

    body = {"model": "gpt-4o-mini", "input": PROMPT, "stream": stream}
    before = cpu_seconds(pid)
    if wrk.available() and args.window.is_integer():  # wrk takes whole seconds (it refuses -d0.5s)
        result = wrk.post(url, body, args.clients, args.window, folder)
        rate = result.rate
    else:
        from bench.load import Plan, run

        plan = Plan(url, body, {}, args.clients, warmup=0.2, window=args.window, stream=stream)
        samples, _ = run(plan)
        rate = sum(1 for s in samples if s.ok and s.end is not None and s.end >= plan.warmup) / args.window
    spent = cpu_seconds(pid) - before
    return rate * args.window / max(spent, 1e-6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default=STARTED_FROM, help="the commit to compare with")
    parser.add_argument("--repeats", type=int, default=5, help="windows per server and mode")
    parser.add_argument("--window", type=float, default=3.0, help="seconds per window")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--server-cpu", type=int, default=0, help="the core both servers run on (-1: any)")
    parser.add_argument("--client-cpu", type=int, default=1, help="the core the load runs on (-1: any)")
    smoke(parser, against="HEAD", repeats=1, window=1.0, clients=4, server_cpu=-1, client_cpu=-1)  # wrk: whole seconds
    args = parse(parser)
    load_on(core(args.client_cpu))
    print(f"speed 0 against {args.against}: {machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="llmsim-speed0-") as folder:
        theirs = ServerProcess("--speed", "0", "--seed", str(SEED),
                               env={"PYTHONPATH": exported(args.against, folder)})
        ours = ServerProcess("--speed", "0", "--seed", str(SEED), env={"PYTHONPATH": str(ROOT)})
        # `python -m llmsim` puts its working directory first on sys.path, before PYTHONPATH: each server runs
        # in its own tree's root, else both import the llmsim of wherever this was started (this tree's).
        theirs.cwd, ours.cwd = folder, str(ROOT)
        with running(ours, theirs):
            for server in (ours, theirs):
                assert server.process is not None
                pin(server.process.pid, core(args.server_cpu))
            same = _answers(ours.base_url) == _answers(theirs.base_url)
            print(f"  the same bytes (ids and times aside), JSON and stream: {'yes' if same else 'NO'}")
            rows, ratios = [], {}
            for stream in (False, True):
                mine: list[float] = []
                other: list[float] = []
                for repeat in range(args.repeats):
                    pair = ((ours, mine), (theirs, other))
                    for server, into in pair[::1 if repeat % 2 == 0 else -1]:
                        assert server.process is not None
                        into.append(window(f"{server.base_url}/responses", server.process.pid, stream, args,
                                           folder))
                mode = "stream" if stream else "json"
                ratios[mode] = statistics.median(a / b for a, b in zip(mine, other, strict=True))
                rows.append([mode, f"{statistics.median(mine):.0f}", f"{statistics.median(other):.0f}",
                             f"{ratios[mode]:.2f}x", " ".join(f"{a / b:.2f}" for a, b in zip(mine, other,
                                                                                          strict=True))])
    print(table(["mode", "this tree req/s per core", f"{args.against} req/s per core", "ratio (median)",
                 "ratio per window pair"], rows))
    for mode, ratio in ratios.items():
        print(goal(f"speed-0 {mode} requests per core against {args.against}", ratio, 1.5))
    print(f"machine at the end: {machine()}")


if __name__ == "__main__":
    main()
