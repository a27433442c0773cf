"""The worker class gunicorn's master holds (--workers N): gunicorn's base worker, which becomes LLMSim's gevent
worker (llmsim/runtime/worker.py) once forked.

The master makes each worker's object before it forks, and imports its class to do so. Importing the gevent
worker there would keep gevent and what it imports (~7 MB) in the master for its life, which only forks and
watches; and every worker imports it anyway. One worker serves in the process itself (LLMSimServer.run_alone),
and becomes the gevent worker in the same way.
"""

from __future__ import annotations

from gunicorn.workers.base import Worker


class ForkedWorker(Worker):
    def init_process(self) -> None:
        from llmsim.runtime.worker import Worker as GeventWorker  # imported in the worker, after the fork

        self.__class__ = GeventWorker  # type: ignore[assignment]  # a subclass of the same base, no slots
        self.init_process()
