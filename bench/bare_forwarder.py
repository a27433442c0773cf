"""The floor of an HTTP hop: the cheapest forwarder on LLMSim's stack, for bench/proxy_bench.py.

A bare WSGI app on the same gunicorn + gevent worker as LLMSim (llmsim.runtime.worker.Worker) that sends each request's
body, unread, to the upstream through the same urllib3 pool as `--backend proxy` (without its timeouts: the
cheapest) and hands the upstream's bytes back as they arrive: no JSON, no validation, no faults, metrics or
store. What it costs is what any Python hop costs here; what LLMSim's proxy costs above it is LLMSim's own.

`python -m bench.bare_forwarder PORT UPSTREAM_URL WORKERS`
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import urllib3

from llmsim.backends.proxy.backend import upstream_pool
from llmsim.config import Settings
from llmsim.server import LLMSimServer

KEPT = ("content-type", "cache-control")


def forwarder(upstream: str) -> Callable[..., Iterable[bytes]]:
    pool = upstream_pool(upstream, timeout=None)  # the proxy's, without its timeouts
    base = urllib3.util.parse_url(upstream).path or ""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        path = environ["PATH_INFO"].removeprefix("/openai/v1").removeprefix("/v1")
        answer = pool.urlopen("POST", base + path, body=body, preload_content=False,
                              headers={"Content-Type": "application/json", "Accept-Encoding": "identity"})
        headers = [(name, value) for name, value in answer.headers.items() if name.lower() in KEPT]
        start_response(f"{answer.status} {answer.reason}", headers)
        return relayed(answer)

    return app


def relayed(answer: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    try:
        yield from answer.read_chunked() if answer.chunked else [answer.read()]
    finally:
        answer.release_conn()


class ForwarderServer(LLMSimServer):
    def __init__(self, settings: Settings, upstream: str) -> None:
        self.upstream = upstream
        super().__init__(settings)

    def load(self) -> Any:
        return forwarder(self.upstream)


if __name__ == "__main__":
    port, upstream, workers = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    ForwarderServer(Settings(port=port, workers=workers), upstream).run()
