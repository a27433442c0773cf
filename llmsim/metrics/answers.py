"""What is measured once an API request is answered, on any transport's path (the app's hooks, the lean proxy
path): its count by endpoint and status, and the store gauges it may have changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llmsim.metrics.registry import Metrics

if TYPE_CHECKING:
    from llmsim.pipeline import Pipeline


def answered(found: Metrics, pipeline: Pipeline, endpoint: str, status: int, gauges: bool) -> None:
    """An API request answered: counted by endpoint and status. `gauges`: it may have stored something, so the
    store gauges are brought up to date."""
    found.answered(endpoint, status)
    if gauges:
        store_gauges(found, pipeline)


def store_gauges(found: Metrics, pipeline: Pipeline, scraping: bool = False) -> None:
    """This process's store sizes (a gauge is written by the process that knows it). A fleet's store (Redis)
    is counted when scraped only: counting it costs round trips, and no request should fail for a gauge."""
    if not scraping and getattr(pipeline.store, "shared", False):
        return
    found.set_store_sizes(len(pipeline.store), len(pipeline.conversations), force=scraping)
