"""A worker's Redis scripts pipelined on one connection (llmsim/runtime/redis_pipe.py), against a real redis-server.

Each case runs in a process of its own under gevent, as a server's worker does: the scripts of greenlets that reach
Redis in one turn of the event loop go out in one write, each still gets its own reply, each wait has the whole
socket timeout, and a lost connection fails its waiters and is replaced.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest
import redis

from llmsim.testing import RedisServer, ServerProcess

SCRIPT = """
from gevent import monkey; monkey.patch_all()
import json, sys, time, gevent, redis
from llmsim.store.redis_client import Scripts, connect

url, case = sys.argv[1], sys.argv[2]
scripts = Scripts(connect(url))
control = redis.Redis.from_url(url)
add = scripts.register("return redis.call('INCRBY', KEYS[1], ARGV[1])")
put = scripts.register("redis.call('SET', KEYS[1], ARGV[1]) return string.len(ARGV[1])")
assert add(keys=["n"], args=[1]) == 1 and put(keys=["big"], args=[""]) == 0  # both scripts known to Redis


def reads():
    return control.info("stats")["total_reads_processed"] - 1  # less the INFO command's own read


def ours():
    return [c for c in control.client_list() if c["cmd"] in ("evalsha", "eval")]


def outcome(greenlet, started):
    error = greenlet.exception
    return {"value": greenlet.value, "error": type(error).__name__ if error else None,
            "seconds": round(greenlet.finished_at - started, 3)}


def timed(call, started, **kwargs):
    try:
        return call(**kwargs)
    finally:
        gevent.getcurrent().finished_at = time.monotonic()


result = {}
if case == "together":
    before = reads()
    greenlets = [gevent.spawn(add, keys=["n"], args=[1]) for _ in range(20)]
    gevent.joinall(greenlets, raise_error=True)
    result["values"] = sorted(g.value for g in greenlets)
    result["reads"] = reads() - before
    result["connections"] = len(ours())
    big = "x" * (8 << 20)  # more than the socket's buffer takes at once: the rest goes when it is writable
    greenlets = [gevent.spawn(put, keys=["big"], args=[big]), *(gevent.spawn(add, keys=["n"], args=[1])
                                                                 for _ in range(3))]
    gevent.joinall(greenlets, raise_error=True)
    result["big"] = [greenlets[0].value, control.strlen("big")]
    result["after_big"] = [g.value for g in greenlets[1:]]
elif case == "timeouts":
    control.execute_command("CLIENT", "PAUSE", 2000, "WRITE")
    started = time.monotonic()
    first = gevent.spawn(timed, add, started, keys=["n"], args=[1])
    gevent.sleep(0.9)
    second = gevent.spawn(timed, add, started, keys=["n"], args=[1])  # same connection, its own whole timeout
    gevent.joinall([first, second])
    result["first"], result["second"] = outcome(first, started), outcome(second, started)
    result["next"] = add(keys=["n"], args=[0])
    result["connections"] = len(ours())
elif case == "lost":
    control.execute_command("CLIENT", "PAUSE", 2000, "WRITE")
    started = time.monotonic()
    waiting = [gevent.spawn(timed, add, started, keys=["n"], args=[1]) for _ in range(5)]
    gevent.sleep(0.2)
    for client in ours():
        control.client_kill(client["addr"])  # as when Redis restarts
    gevent.joinall(waiting)
    result["waiting"] = [outcome(g, started) for g in waiting]
    control.execute_command("CLIENT", "UNPAUSE")
    result["next"] = add(keys=["m"], args=[1])
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer(fsync="everysec") as server:
        yield server


def run(redis_server: RedisServer, case: str, query: str = "") -> dict[str, object]:
    url = redis_server.url + query
    redis.Redis.from_url(url).flushdb()
    result = subprocess.run([sys.executable, "-c", SCRIPT, url, case], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_scripts_of_one_loop_turn_go_in_one_write_and_each_gets_its_own_reply(redis_server: RedisServer) -> None:
    result = run(redis_server, "together")
    assert result["values"] == list(range(2, 22))  # 20 greenlets, each its own INCRBY's reply, none lost or doubled
    assert result["reads"] <= 2  # Redis read them together (one round trip each: 20 reads)
    assert result["connections"] == 1
    assert result["big"] == [8 << 20] * 2  # a write larger than the socket's buffer goes whole, in order
    assert result["after_big"] == [22, 23, 24]


def test_each_pipelined_wait_has_the_whole_timeout_and_a_timed_out_connection_is_replaced(
        redis_server: RedisServer) -> None:
    result = run(redis_server, "timeouts", "?socket_timeout=1.5")
    first, second = result["first"], result["second"]
    assert first["error"] == "TimeoutError" and 1.5 <= first["seconds"] < 1.9  # type: ignore[index,operator]
    # Sent on the same connection 0.9 s later, while Redis is paused until 2 s: its wait is not cut short with the
    # first's, and it is answered when Redis goes on.
    assert second["error"] is None and second["value"] == 3  # type: ignore[index]
    assert second["seconds"] >= 1.9  # type: ignore[index,operator]
    assert result["next"] == 3 and result["connections"] == 1  # a fresh connection; the old one closed


def test_a_lost_connection_fails_every_request_waiting_on_it_and_the_next_reconnects(
        redis_server: RedisServer) -> None:
    result = run(redis_server, "lost", "?socket_timeout=5")
    waiting = result["waiting"]
    assert [w["error"] for w in waiting] == ["ConnectionError"] * 5  # type: ignore[attr-defined,index]
    assert all(w["seconds"] < 1.0 for w in waiting)  # type: ignore[attr-defined,index]  # at once, not at the timeout
    assert result["next"] == 1


def test_a_workers_concurrent_answers_wait_on_one_connection_each_for_its_own_reply(
        redis_server: RedisServer) -> None:
    """16 JSON answers at once on one worker while Redis holds its writes: all wait on one connection (one each
    without pipelining), and each is answered, stored and logged once Redis goes on."""
    url = redis_server.url.rsplit("/", 1)[0] + "/4"
    control = redis.Redis.from_url(url)
    control.flushdb()
    with ServerProcess("--speed", "0", "--store", url, startup_timeout=120) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        client.responses.create(model="gpt-4o", input="warm up")  # the worker's scripts known to Redis
        control.execute_command("CLIENT", "PAUSE", 5000, "WRITE")
        try:
            with ThreadPoolExecutor(16) as pool:
                answers = [pool.submit(client.responses.create, model="gpt-4o", input=f"question {i}")
                           for i in range(16)]
                time.sleep(1.5)  # every request made and waiting for Redis
                scripting = [c for c in control.client_list() if c["db"] == "4" and c["cmd"] in ("evalsha", "eval")]
                assert not any(answer.done() for answer in answers)
                control.execute_command("CLIENT", "UNPAUSE")
                made = [answer.result() for answer in answers]
        finally:
            control.execute_command("CLIENT", "UNPAUSE")
        assert len(scripting) == 1
        assert len({answer.id for answer in made}) == 16
        for answer in made:
            assert client.responses.retrieve(answer.id).output_text == answer.output_text
        log = [entry for entry in httpx.get(f"{server.url}/llmsim/admin/requests").json()["data"]
               if entry["response_id"] in {answer.id for answer in made}]
        assert len(log) == 16 and all(entry["status"] == 200 for entry in log)
        client.close()
