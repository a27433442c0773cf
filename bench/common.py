"""What the benches share: the prompt, quantiles and tables, where the CPU went, and where processes run.

Each bench measured these its own way once (three quantiles, two CPU readers, four copies of the prompt); one
copy here keeps their figures comparable.
"""

from __future__ import annotations

import argparse
import os
import resource
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "Tell me a story about a lighthouse keeper."
DELTA = b"event: response.output_text.delta\n"  # a text delta's SSE frame starts so: what the loads count


def counts(value: str) -> list[int]:
    """An argparse type: `1,16,64` → [1, 16, 64]."""
    return [int(x) for x in value.split(",")]


def quantile(values: Iterable[float], q: float) -> float:
    """The `q` quantile, interpolated between the nearest ranks; NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table, right-aligned: what bench/README.md quotes."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.rjust(w) for c, w in zip(cells, widths, strict=False)) + " |"

    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def machine() -> str:
    """The cores and the load average: on a shared machine the figures are the machine's as much as LLMSim's."""
    load = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min)"


def goal(label: str, value: float, target: float, unit: str = "x", higher: bool = True) -> str:
    met = value >= target if higher else value <= target
    sign = ">=" if higher else "<="
    return f"  goal {label}: {value:.2f}{unit} (goal {sign} {target:g}{unit}) {'MET' if met else 'NOT MET'}"


def children(pid: int) -> list[int]:
    """A process's children (a server's master: its workers)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(child) for child in f.read().split()]
    except OSError:
        return []


def cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and its children so far (a server's master and workers): their threads' run time
    in nanoseconds (/proc/TID/schedstat), as a short window's CPU can fall below utime and stime's clock tick
    (10 ms: a smoke run's two streams measured none), else those."""
    total = 0.0
    for task in [pid, *children(pid)]:
        try:
            if os.path.exists(f"/proc/{task}/schedstat"):
                total += sum(_run_seconds(f"/proc/{task}/task/{tid}") for tid in os.listdir(f"/proc/{task}/task"))
            else:
                with open(f"/proc/{task}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass  # gone
    return total


def _run_seconds(thread: str) -> float:
    try:
        with open(f"{thread}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except OSError:
        return 0.0  # a thread that ended since


class CpuMeter:
    """A process's CPU over a window that starts `after` seconds from now: a share of one core, near 100 % means
    it is the bottleneck."""

    def __init__(self, pid: int, after: float, window: float, read: Callable[[int], float] = cpu_seconds) -> None:
        self.window = window
        self.readings: list[float] = []
        for delay in (after, after + window):
            timer = threading.Timer(delay, lambda: self.readings.append(read(pid)))
            timer.daemon = True
            timer.start()

    def share(self) -> float:
        return (self.readings[1] - self.readings[0]) / self.window if len(self.readings) == 2 else float("nan")


def core_busy(cpu: int | None) -> tuple[float, float]:
    """A core's busy and total jiffies so far (/proc/stat); None: all cores."""
    name = "cpu" if cpu is None else f"cpu{cpu}"
    with open("/proc/stat") as stat:
        for line in stat:
            if line.split(maxsplit=1)[0] == name:
                ticks = [int(v) for v in line.split()[1:9]]
                return sum(ticks) - ticks[3] - ticks[4], sum(ticks)
    raise ValueError(name)


def place(pid: int, cpu: int | None) -> None:
    """A server (its master and workers) or redis-server on one core, or (None) on any."""
    for task in [pid, *children(pid)]:
        os.sched_setaffinity(task, range(os.cpu_count() or 1) if cpu is None else {cpu})


def pin(pid: int, cpu: int | None) -> None:
    """A server on one core, away from the load generator; None: left where it is."""
    if cpu is not None:
        place(pid, cpu)


def core(cpu: int) -> int | None:
    """A `--server-cpu`-style flag's core: None for -1 (any), and on a machine of one core."""
    return cpu if cpu >= 0 and (os.cpu_count() or 1) >= 2 else None


def load_on(cpu: int | None) -> None:
    """This process, and the load processes it forks, on the load's core (None: any)."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


def more_files() -> None:
    """As many open files as the hard limit allows (up to 65,536): 1,000 streams hold 2,000 sockets here."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))


def smoke(parser: argparse.ArgumentParser, **values: object) -> None:
    """`--smoke`: the bench's real code path for about a second (tests/test_bench.py), `values` over the defaults:
    no pinning (the test's machine may be busy), the Python load (no `wrk` needed)."""
    parser.add_argument("--smoke", action="store_true",
                        help="run every part for about a second, to check the bench runs (its figures mean nothing)")
    parser.set_defaults(_smoke=values)


def parse(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The arguments, with the smoke run's values where `--smoke` was given and the flag was left at its default."""
    args = parser.parse_args()
    if args.smoke:
        for name, value in args._smoke.items():
            if getattr(args, name) == parser.get_default(name):
                setattr(args, name, value)
    return args
