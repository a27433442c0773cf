"""Latency profiles, pacing and prices: how long a model takes and what it would cost."""
