"""Every bench runs: each for about a second (`--smoke`), through its real code path (its servers, its load, its
tables), and prints figures that make sense. The figures themselves mean nothing here (a second, on a machine
that may be busy); that they are there, and positive, does: a bench that no longer runs, or measures nothing,
fails here rather than in the next person's benchmark run.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NUMBER = r"[-+]?(?:\d+\.?\d*|nan|inf)"


def smoke(name: str, script: bool = False, timeout: float = 300) -> str:
    """`python -m bench.NAME --smoke`'s output (`script`: `python bench/NAME.py --smoke`'s); it must exit cleanly."""
    command = [f"bench/{name}.py"] if script else ["-m", f"bench.{name}"]
    done = subprocess.run([sys.executable, *command, "--smoke"], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"bench.{name} exited with {done.returncode}:\n{done.stdout[-3000:]}" \
                                 f"\n{done.stderr[-3000:]}"
    return done.stdout


def figures(pattern: str, text: str, count: int = 1) -> list[float]:
    """The numbers `pattern`'s groups catch in `text`, every match's; at least `count` matches."""
    found = [float(group) for match in re.finditer(pattern, text) for group in match.groups()]
    assert len(found) >= count, f"{pattern!r} matched {len(found)} figures, not {count}:\n{text}"
    return found


def positive(values: list[float]) -> bool:
    return all(math.isfinite(v) and v > 0 for v in values)


def row(table_text: str, *first: str, where: dict[int, str] | None = None) -> list[str]:
    """The cells of the first Markdown table row whose first cells are `first` (and cell i `where[i]`)."""
    for line in table_text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[:len(first)] == list(first) and all(cells[i:i + 1] == [v] for i, v in (where or {}).items()):
            return cells
    raise AssertionError(f"no row {first} {where or ''} in:\n{table_text}")


def test_run() -> None:
    out = smoke("run")
    for mode in ("json", "stream"):  # (a): both servers answered, and a ratio came of it
        cells = row(out, mode, "16")
        assert positive([float(cells[2]), float(cells[7]), float(cells[-1].rstrip("x"))]), cells
    assert positive(figures(r"goal (?:JSON|streaming) llmsim/bare at 16 clients: (" + NUMBER + ")x", out, 2))
    assert positive(figures(r"Flask alone (" + NUMBER + ") req/s", out))
    assert positive(figures(r"in process: (?:JSON|stream) (" + NUMBER + ") ms CPU", out, 2))
    # (c), the same code as (b): streams paced, their inter-token gaps measured
    cells = row(out.split("\n(c) ")[1], "10", where={6: "inter-token"})
    assert positive([float(cells[3])] + [float(v) for v in cells[9].split("/")]), cells
    assert figures(r"goal streams within 10 % \(knee among \[10, 20\]\): (" + NUMBER + ")", out)[0] in (0, 10, 20)
    assert positive(figures(r"stored responses: (" + NUMBER + ") KiB each", out))
    assert positive(figures(r"turns 2-6 take (" + NUMBER + ") ms CPU each, turns 46-50 (" + NUMBER + ") ms", out))


def test_proxy_bench() -> None:
    out = smoke("proxy_bench")
    assert figures(r"round (\d+):", out) == [1]  # a round: one window each, direct, forwarder, proxy
    for via in ("bare forwarder", "LLMSim proxy"):
        cells = row(out, "2", via)
        assert positive([float(cells[2]), float(cells[3]), float(cells[6]), float(cells[7])]), cells


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_stores() -> None:
    out = smoke("stores")
    for store in ("memory", "redis", "sqlite"):
        cells = row(out, store, "1")
        assert positive([float(cells[2]), float(cells[-1])]), cells
    assert positive([float(row(out, "create (json)")[1]), float(row(out, "create (stream)")[1])])
    assert positive(figures(r"four workers: (" + NUMBER + ")x one", out))
    assert positive(figures(r"the floor's four workers: (" + NUMBER + ")x one", out))
    cells = row(out, "1", "20")  # the capacity table: one worker, 20 streams
    assert positive([float(cells[2])]), cells


def test_stalls() -> None:
    out = smoke("stalls")
    assert positive(figures(r"health, .*?p50 +(" + NUMBER + ") ms", out, 3))
    assert positive(figures(r"N=[\d.,]+: +(\d+) ms \(200", out, 12))
    assert positive(figures(r"synchronous: +(" + NUMBER + ") responses/s", out))
    assert len(figures(r"background/sync = (" + NUMBER + ")", out)) == 1


def test_meter() -> None:
    out = smoke("meter", script=True)
    assert positive(figures(r"(" + NUMBER + r") us/event", out, 2))
    assert positive(figures(r"ratio measured / bare: +(" + NUMBER + ")", out))


def test_text_bench() -> None:
    out = smoke("text_bench", script=True)  # as a script, as the README had them for years: the imports work so too
    for mode in ("faker", "prose", "lorem", "echo"):
        cells = row(out, mode)
        assert positive([float(cells[1]), float(cells[2])]), cells


def test_messages_bench() -> None:
    out = smoke("messages_bench")
    for surface in ("responses", "messages"):
        cells = row(out, surface)
        assert positive([float(cells[1]), float(cells[2])]), cells
    assert positive(figures(r"ratio messages / responses: (" + NUMBER + ")x", out))
    paced = out.split("paced streams")[1]
    for surface in ("responses", "messages"):
        cells = row(paced, surface)
        assert positive([float(cells[2]), float(cells[3])]), cells


def test_mlx_bench() -> None:
    pytest.importorskip("mlx_lm")
    out = smoke("mlx_bench")
    assert positive(figures(r"decode +(" + NUMBER + ") tok/s", out, 7))
    cells = row(out, "2")  # two concurrent streams, on LLMSim and on mlx_lm's server
    assert positive([float(cells[1]), float(cells[4])]), cells



def test_startup() -> None:
    out = smoke("startup")
    answer, cpu, rss, pss = figures(r"first answer (" + NUMBER + r") s, (" + NUMBER + r") s CPU, idle memory (" + NUMBER
                                    + r") MB RSS / (" + NUMBER + ") MB PSS", out)[:4]
    assert positive([answer, cpu, rss, pss]) and pss <= rss, out
    assert positive(figures(r"session start (" + NUMBER + r") s, each test (" + NUMBER + ") ms", out, 2))
    assert len(figures(r"an unused plugin, CPU beyond `import pytest`: llmsim (" + NUMBER + r") ms, Faker's ("
                       + NUMBER + ") ms", out, 2)) == 2


def test_crossings() -> None:
    """The road's length is counted, and nothing below the transport calls back up into it."""
    done = subprocess.run([sys.executable, "-m", "bench.crossings"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    for kind in ("plain", "stream"):
        modules, calls, upward = figures(kind + r": (\d+) modules, (\d+) calls from one module into another, "
                                         r"(\d+) of them upward", done.stdout)
        assert modules > 10 and calls > modules, done.stdout
        assert upward == 0, done.stdout
