"""Every bench runs: each for about a second (`--smoke`), through its real code path (its servers, its load, its
tables), and prints figures that make sense. The figures themselves mean nothing here (a second, on a machine
that may be busy); that they are there, and positive, does: a bench that no longer runs, or measures nothing,
fails here rather than in the next person's benchmark run.

The costliest benches' tests are in files of their own (tests/test_bench_stores.py, tests/test_bench_stalls.py,
tests/test_bench_run.py, tests/test_bench_proxy.py), so that pytest-xdist's `--dist loadfile` runs them side by side.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench_kit import NUMBER, ROOT, figures, positive, row, smoke


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


def test_batches_bench() -> None:
    out = smoke("batches_bench")
    assert positive(figures(r"during a batch +(" + NUMBER + ") ms", out, 2))
    assert positive(figures(r"batch: (" + NUMBER + ") lines/s", out))


def test_chat_parity() -> None:
    out = smoke("chat_parity")
    for part in ("JSON", "stream"):
        assert positive(figures(part + r": chat (" + NUMBER + r") ms, responses (" + NUMBER + ") ms", out, 2))
        assert positive(figures(part + r": chat / responses requests per CPU second: (" + NUMBER + ")x", out))
    assert out.count("the same answer: yes") == 2, out


def test_gemini_bench() -> None:
    out = smoke("gemini_bench")
    for load in ("responses stream", "gemini stream", "responses JSON", "openai embeddings", "gemini embeddings"):
        cells = row(out, load)
        assert positive([float(cells[1]), float(cells[2])]), cells
    assert positive(figures(r"ratio gemini stream / responses stream: (" + NUMBER + ")x", out))
    assert positive(figures(r"ratio openai embeddings / responses JSON: (" + NUMBER + ")x", out))


def test_mlx_bench() -> None:
    pytest.importorskip("mlx_lm")
    out = smoke("mlx_bench")
    assert positive(figures(r"decode +(" + NUMBER + ") tok/s", out, 7))
    for n in (1, 8):  # the goals' windows, alternating between the servers
        assert positive(figures(rf"{n} stream\(s\): llmsim ({NUMBER}) tok/s, mlx_lm server ({NUMBER})", out, 2))
    cells = row(out, "2")  # two concurrent streams, on LLMSim and on mlx_lm's server
    assert positive([float(cells[1]), float(cells[4])]), cells


def test_startup() -> None:
    out = smoke("startup")
    answer, cpu, rss, pss = figures(r"first answer (" + NUMBER + r") s, (" + NUMBER + r") s CPU, idle memory (" + NUMBER
                                    + r") MB RSS / (" + NUMBER + ") MB PSS", out)[:4]
    assert positive([answer, cpu, rss, pss]) and pss <= rss, out
    assert positive(figures(r"session start (" + NUMBER + r") s, (" + NUMBER + r") s CPU .*, each test (" + NUMBER
                            + ") ms", out, 3))
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


def test_speed0() -> None:
    out = smoke("speed0")
    assert "the same bytes (ids and times aside), JSON and stream: yes" in out  # the hot path changes no byte
    for mode in ("json", "stream"):
        cells = row(out, mode)
        assert positive([float(cells[1]), float(cells[2]), float(cells[3].rstrip("x"))]), cells
