"""bench/stalls.py's smoke run (tests/test_bench.py says why), in a file of its own for `--dist loadfile`.
"""

from __future__ import annotations

from bench_kit import NUMBER, figures, positive, smoke


def test_stalls() -> None:
    out = smoke("stalls")
    assert positive(figures(r"health, .*?p50 +(" + NUMBER + ") ms", out, 3))
    assert positive(figures(r"N=[\d.,]+: +(\d+) ms \(200", out, 12))
    assert positive(figures(r"synchronous: +(" + NUMBER + ") responses/s", out))
    assert len(figures(r"background/sync = (" + NUMBER + ")", out)) == 1
