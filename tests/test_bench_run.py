"""bench/run.py's smoke run (tests/test_bench.py says why), in a file of its own for `--dist loadfile`.
"""

from __future__ import annotations

from bench_kit import NUMBER, figures, positive, row, smoke


def test_run() -> None:
    out = smoke("run", "--part", "a,c,d")  # (e) and (f): tests/test_bench_capacity.py, beside it
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
