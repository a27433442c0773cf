"""bench/run.py's smoke run of its capacity parts, (e) and (f), in a file of its own for `--dist loadfile`: beside
tests/test_bench_run.py's parts rather than after them (together they were the suite's longest test, 30 s)."""

from __future__ import annotations

from bench_kit import NUMBER, figures, positive, row, smoke


def test_overload_and_cpu_per_delta() -> None:
    out = smoke("run", "--part", "e,f")
    # (e): twice the streams a worker runs, queued past it, beside one that runs them all
    overloaded = out.split("\n(e) ")[1]
    queued, unqueued = row(overloaded, "10", where={1: "5"}), row(overloaded, "10", where={1: "all"})
    assert float(queued[5].split("/")[1]) > 0 and unqueued[5] == "0/0", (queued, unqueued)  # the queue's length
    assert positive([float(v) for v in queued[7].split(" ")[0].split("/")]), queued
    assert 0 <= float(queued[4].rstrip("%")) <= 100, queued  # a perfect pacer's share, for the same streams
    assert figures(r"goal streams on time at 2x the knee \(10\), queued past 5, of a perfect pacer's: (" + NUMBER
                   + ")%", out)
    # (f): the server's CPU per delta at each number of open streams
    assert positive([float(row(out.split("\n(f) ")[1], str(n))[3]) for n in (2, 4)])
    assert figures(r"goal CPU per delta at 4 streams over at 2: (" + NUMBER + ")x", out)
