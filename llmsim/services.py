"""What the endpoints share, in a module of its own so `api/` and `app.py` both import it one way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from llmsim.config import Settings
from llmsim.pipeline import Pipeline
from llmsim.timing.profiles import Catalog

if TYPE_CHECKING:  # built by the app factory; the files and batch routes reach it here
    from llmsim.jobs.service import Jobs


@dataclass
class Services:
    """What the endpoints share; reachable as `current_app.extensions["llmsim"]`."""

    settings: Settings
    catalog: Catalog
    pipeline: Pipeline
    jobs: Jobs | None = None  # files and batches (llmsim/jobs/)
