"""The serving runtime the speed depends on: gunicorn's gevent worker and what reaches into gevent's hub.

Each module leans on internals of gunicorn or gevent that their public APIs do not promise; upgrading either,
check these first (tests/test_sockets.py, test_ticks.py, test_paced_writer.py, test_redis_pipe.py, test_serve.py
exercise them):

- `worker.py`: gunicorn's `GeventWorker`, bypassing its `handle` for `AsyncWorker.handle` (which leaves the
  socket non-blocking), overriding `handle_request`, `handle_error` and `timeout_ctx`, replacing `req.body`
  with a `gunicorn.http.body.Body`, and sizing gevent's pool through `worker_connections`; around
  `GeventWorker.patch`, it relies on gevent's `patch_all` finding its plugins through
  `importlib.metadata.entry_points` (served from one read while it patches).
- `forked.py`: gunicorn's master makes each worker's object from the class it is named, before the fork, and
  calls its `init_process` after it; there the object's class becomes `worker.py`'s (both subclass gunicorn's
  base `Worker`, neither has slots). One worker runs with no master (`LLMSimServer.run_alone` in
  llmsim/server.py): it binds with `gunicorn.sock.create_sockets`, makes the worker as the arbiter does
  (`Worker(age, ppid, sockets, app, timeout, cfg, log)`) and calls the `worker_exit` hook itself; the worker
  then skips `GeventWorker.notify`'s parent check and ignores SIGHUP.
- `sockets.py`: subclasses `gevent.socket.socket` and sends on its non-blocking `_sock` directly; relies on
  gunicorn writing a response's head, body chunks and last chunk through `sendall`.
- `ticks.py`: one periodic `hub.loop.timer` per worker; `gevent.monkey.is_module_patched` tells a worker from
  plain threads.
- `release.py`: writes from the hub (in a tick's callback) on gevent's `_sock`, and parks the request's
  greenlet (`gevent.getcurrent`).
- `waits.py`, `fairness.py`: `time.sleep` and `select.select` looked up at call time, so gevent's patched
  ones are used in a worker.
- `wsconn.py`: the object simple-websocket's `Server` takes as `environ["gunicorn.socket"]`; relies on it
  writing every frame (and its handshake, pings, pongs and close) through `sock.send`, from its own reader
  greenlet as well as the request's.
- `shutdown.py`: `Greenlet.kill` / `gevent.kill` with an exception raised where a greenlet waits (or takes a
  turn: `turn` lets it pass there); the worker
  overrides gunicorn's `handle_exit` (SIGTERM) and relies on `GeventWorker.run` waiting for its pool to empty.
- `redis_pipe.py`, `redis_link.py`: redis-py's `Connection._sock` (and gevent's `_sock` under it),
  `hub.loop.run_callback` and `hub.loop.timer`, and `gevent.hub.Waiter` to park and wake requests.
"""
