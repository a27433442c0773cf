"""Injected faults, rate limits and scripted scenarios."""
