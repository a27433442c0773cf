"""What the bench smoke tests share (tests/test_bench.py and its siblings, one file per costly bench so that
pytest-xdist's `--dist loadfile` runs them side by side): a bench's `--smoke` output, and the figures in it."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NUMBER = r"[-+]?(?:\d+\.?\d*|nan|inf)"


def smoke(name: str, *flags: str, script: bool = False, timeout: float = 300) -> str:
    """`python -m bench.NAME --smoke FLAGS`'s output (`script`: `python bench/NAME.py --smoke`'s); it must exit
    cleanly."""
    command = [f"bench/{name}.py"] if script else ["-m", f"bench.{name}"]
    done = subprocess.run([sys.executable, *command, "--smoke", *flags], cwd=ROOT, capture_output=True, text=True,
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
