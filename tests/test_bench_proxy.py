"""bench/proxy_bench.py's smoke run (tests/test_bench.py says why), in a file of its own for
`--dist loadfile`.
"""

from __future__ import annotations

from bench_kit import figures, positive, row, smoke


def test_proxy_bench() -> None:
    out = smoke("proxy_bench")
    assert figures(r"round (\d+):", out) == [1]  # a round: one window each, direct, forwarder, proxy
    for via in ("bare forwarder", "LLMSim proxy"):
        cells = row(out, "2", via)
        assert positive([float(cells[2]), float(cells[3]), float(cells[6]), float(cells[7])]), cells
