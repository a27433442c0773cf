"""`wrk` as a closed-loop load (Debian's `wrk` package): one C thread that takes a few percent of a core where
bench/load.py's Python clients take most of one, so the server it measures is the bottleneck, not the load."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

_SCRIPT = """
wrk.method = "POST"
wrk.body = [==[{body}]==]
wrk.headers["Content-Type"] = "application/json"
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %f %f %d\\n", summary.requests - e.status, summary.duration,
    latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.status + e.timeout))
end
"""


class Result(NamedTuple):
    rate: float  # answered (2xx) requests/s; a stream counts when its last byte has arrived
    p50: float  # latency, ms
    p99: float
    errors: int
    cpu: float  # wrk's CPU, a share of one core


def available() -> bool:
    return shutil.which("wrk") is not None


def post(url: str, body: dict[str, object], clients: int, window: float, directory: str) -> Result:
    """One `wrk` thread, `clients` connections, each POSTing `body` for `window` seconds."""
    script = Path(directory, "post.lua")
    script.write_text(_SCRIPT.format(body=json.dumps(body)))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["wrk", "-t1", f"-c{clients}", f"-d{window:g}s", "--timeout", "10s", "-s", str(script), url],
                         capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    done, micros, p50, p99, errors = out.rpartition("RESULT ")[2].split()
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Result(int(done) / (int(micros) / 1e6), float(p50) / 1000, float(p99) / 1000, int(errors), cpu / window)
