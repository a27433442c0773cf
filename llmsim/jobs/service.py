"""A server's files and batches: what the routes (llmsim/api/files.py, llmsim/api/batches.py,
llmsim/api/message_batches.py) reach, built once with the app."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llmsim.jobs.files import Files
from llmsim.jobs.message_batches import MessageBatches
from llmsim.jobs.openai_batches import OpenAIBatches
from llmsim.jobs.runner import Runner
from llmsim.store.objects import ObjectStore

if TYPE_CHECKING:
    from llmsim.pipeline import Pipeline


class Jobs:
    def __init__(self, pipeline: Pipeline, store: ObjectStore, max_file_bytes: int,
                 on_answer: Callable[[str, int], None] | None = None,
                 loads: Callable[[str], Any] = json.loads) -> None:
        """`on_answer`: told each line's endpoint and status, as the metrics count an answered request. `loads`:
        how a line of an uploaded file is decoded (as strictly as a request's body)."""
        self.files = Files(store, max_file_bytes)
        self.runner = Runner(pipeline, store, on_answer)
        self.batches = OpenAIBatches(self.files, self.runner, loads)
        self.message_batches = MessageBatches(self.runner)
