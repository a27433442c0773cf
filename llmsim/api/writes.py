"""Writes a JSON answer holds back until it leaves: its stored response, its request log entry and its token limit's
true-up, sent to Redis together on one round trip instead of one each. Nothing reads them before the answer leaves,
and if they cannot be written the answer becomes a 503: nothing acknowledged is lost. When nothing can intervene in
the request (llmsim/chaos/redis_state.py), its admission goes with them: the pipeline holds and commits them
(`Pipeline.hold`, `Pipeline.finish`); here they are released as the answer leaves."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from flask import Flask, Response

EXTENSION = "llmsim.writes"
log = logging.getLogger("llmsim")


def install(app: Flask, batch: Any, unavailable: Callable[[BaseException], Any]) -> None:
    """`batch`: the Redis store's (None: no store to batch for). Install before the hooks whose writes join it:
    Flask runs `after_request` hooks last-installed first."""
    if batch is None:
        return
    app.extensions[EXTENSION] = batch
    from llmsim.store.redis_client import unavailable_errors

    errors = unavailable_errors()

    @app.after_request
    def _release(response: Response) -> Response:
        try:
            batch.release()
        except errors as error:
            return app.make_response(unavailable(error))
        return response

    @app.teardown_request
    def _leftover(_error: BaseException | None) -> None:
        """A hook that failed before `_release` left writes held: sent now, never kept for the next request that
        this greenlet (a kept-alive connection) serves."""
        try:
            batch.release()
        except errors:
            log.warning("redis unavailable: held writes dropped", exc_info=True)

