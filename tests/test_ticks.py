"""The pacing scheduler: many streams' waits share one timer per worker, each still wakes on time."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

from llmsim.runtime import ticks

SCRIPT = textwrap.dedent("""
    from gevent import monkey; monkey.patch_all()
    import json, time, gevent
    from llmsim.runtime import ticks

    lateness, early = [], []
    def stream(gap):
        target = time.monotonic()
        for _ in range(10):
            target += gap
            ticks.sleep(target - time.monotonic())
            now = time.monotonic()
            (lateness if now >= target else early).append(abs(now - target))

    gone = gevent.spawn(stream, 0.05)  # killed while parked: the others carry on
    streams = [gevent.spawn(stream, 0.02 + 0.001 * (i % 5)) for i in range(200)]
    wakes = 0
    hub = gevent.get_hub()
    gevent.sleep(0.01)
    ticker = hub.llmsim_ticker
    original = ticker._wake
    def counted():
        global wakes
        wakes += 1
        original()
    ticker._wake = counted  # from the next time the timer is set
    gone.kill()
    gevent.joinall(streams, timeout=30)
    print(json.dumps({"done": sum(s.successful() for s in streams), "waits": len(lateness) + len(early),
                      "wakes": wakes, "early_max": max(early, default=0), "late": sorted(lateness),
                      "idle": ticker.idle}))
""")


def test_streams_due_in_the_same_tick_wake_together_and_on_time() -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["done"] == 200 and out["waits"] == 2000
    assert out["wakes"] < out["waits"] / 4  # one timer turn wakes many streams
    assert out["early_max"] <= 0.0006  # never woken more than half a tick early
    late = out["late"]
    assert late[len(late) // 2] < 0.010  # generous: the machine may be busy
    assert out["idle"]  # nobody waits: the timer is stopped


def test_outside_gevent_it_is_a_plain_sleep() -> None:
    start = time.monotonic()
    ticks.sleep(0.01)
    assert 0.009 <= time.monotonic() - start < 1.0


SPARSE = textwrap.dedent("""
    from gevent import monkey; monkey.patch_all()
    import json, time, gevent
    from llmsim.runtime import ticks

    ticker = ticks.ticker()
    wakes = 0
    original = ticker._wake
    def counted():
        global wakes
        wakes += 1
        original()
    ticker._wake = counted
    late = []
    def stream():
        target = time.monotonic()
        for _ in range(10):
            target += 0.02
            ticks.sleep(target - time.monotonic())
            late.append(time.monotonic() - target)
    gevent.joinall([gevent.spawn(stream)], timeout=30)
    print(json.dumps({"wakes": wakes, "late": sorted(late)}))
""")


def test_one_stream_wakes_the_worker_only_when_it_is_due() -> None:
    result = subprocess.run([sys.executable, "-c", SPARSE], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # about one a token, a few more when the loop's clock lags (a periodic 1 ms tick woke it ~150-200 times)
    assert out["wakes"] <= 20, out
    assert min(out["late"]) >= -0.0006 and out["late"][5] < 0.05  # never early by more than half a tick
