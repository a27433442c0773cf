"""Prometheus metrics: definitions, the per-request meter, and the multiprocess directory."""
