"""What the endpoints share, in a module of its own so `api/` and `app.py` both import it one way."""

from __future__ import annotations

from dataclasses import dataclass

from llmsim.config import Settings
from llmsim.jobs.service import Jobs
from llmsim.pipeline import Pipeline
from llmsim.timing.profiles import Catalog


@dataclass
class Services:
    """What the endpoints share; reachable as `current_app.extensions["llmsim"]`."""

    settings: Settings
    catalog: Catalog
    pipeline: Pipeline
    jobs: Jobs | None = None  # files and batches (llmsim/jobs/)
