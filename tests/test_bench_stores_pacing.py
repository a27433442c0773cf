"""bench/stores.py's smoke run, part (b): paced streams on Redis at one and four workers, the floor, the capacity
(tests/test_bench_stores.py says why it is a file of its own).
"""

from __future__ import annotations

import shutil

import pytest

from bench_kit import NUMBER, figures, positive, row, smoke


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_stores_pacing() -> None:
    out = smoke("stores", "--part", "b")
    assert positive(figures(r"four workers: (" + NUMBER + ")x one", out))
    assert positive(figures(r"the floor's four workers: (" + NUMBER + ")x one", out))
    cells = row(out, "1", "20")  # the capacity table: one worker, 20 streams
    assert positive([float(cells[2])]), cells
