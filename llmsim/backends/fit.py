"""`llmsim profile fit DIR -o FILE.yaml`: each model's timing, fitted from the streams it recorded.

- TTFT: from the request to the first output (the first output item, or the first chat delta), one sample
  per stream (events that arrive together on a busy host make later offsets unreliable, the request's is
  not); with prefill taken out, fitted as a lognormal by median and median absolute deviation of the logs,
  which a few stalled samples do not drag → p50, p95.
- ITL: the gaps between consecutive visible deltas (text, tool arguments), one token each, as a lognormal
  fitted by moments over each stream's span (see `lognormal_from_streams`).
- prefill tokens/s: the least-squares slope of TTFT against input tokens, when the inputs vary enough for
  the slope to stand out of the noise; otherwise the model's shipped value is kept, and the output says so.
- reasoning tokens/s: reasoning tokens (from usage) over the time between the first output and the first
  visible delta, beyond what a non-reasoning TTFT explains.

The file is in the `profiles/` format: the shipped profile of the model (if any) with its timing replaced,
so `--profiles-dir` loads it in place of the shipped one.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from llmsim.backends.cassette import Cassette, load
from llmsim.config import DEFAULT_PROFILES_DIR
from llmsim.timing.latency import Z95
from llmsim.timing.profiles import Profile, load_catalog

VISIBLE = frozenset({"response.output_text.delta", "response.function_call_arguments.delta",
                     "response.custom_tool_call_input.delta", "response.refusal.delta"})
MIN_PREFILL_SAMPLES = 8
MIN_T_STATISTIC = 3.0  # how far the prefill slope must stand above its standard error to be believed


@dataclass
class Samples:
    """One model's measurements, in milliseconds."""

    ttft: list[tuple[float, int]] = field(default_factory=list)  # (TTFT, input tokens or -1)
    itl: list[tuple[float, int]] = field(default_factory=list)  # per stream: (first to last delta, gaps)
    reasoning: list[tuple[float, int, int]] = field(default_factory=list)  # (first visible, input, reasoning tokens)

    def add(self, cassette: Cassette) -> None:
        if cassette.status >= 400 or not cassette.events:
            return
        first_output = last_visible = first_visible = None
        gaps = 0
        usage: dict[str, Any] = {}
        for t, kind, data in cassette.events:
            ms = t * 1000
            visible = kind in VISIBLE or (not kind and _chat_delta(data))
            if first_output is None and (kind == "response.output_item.added" or visible):
                first_output = ms
            if visible:
                gaps += first_visible is not None
                first_visible = ms if first_visible is None else first_visible
                last_visible = ms
            if kind in ("response.completed", "response.incomplete") or (not kind and '"usage":{' in data):
                event = json.loads(data)
                usage = (event.get("response") or event).get("usage") or usage
        if first_output is None:
            return
        if gaps and first_visible is not None and last_visible is not None:
            self.itl.append((last_visible - first_visible, gaps))
        input_tokens = int(usage.get("input_tokens", usage.get("prompt_tokens", -1)))
        details = usage.get("output_tokens_details") or usage.get("completion_tokens_details") or {}
        reasoning = int(details.get("reasoning_tokens") or 0)
        if reasoning and first_visible is not None:
            self.reasoning.append((first_visible, input_tokens, reasoning))
        else:
            self.ttft.append((first_output, input_tokens))


def _chat_delta(data: str) -> bool:
    if not data.startswith("{") or '"delta"' not in data:
        return False
    for choice in json.loads(data).get("choices") or []:
        delta = choice.get("delta") or {}
        if delta.get("content") or delta.get("tool_calls") or delta.get("reasoning_content"):
            return True
    return False


def lognormal(values: list[float]) -> dict[str, float]:
    """p50 and p95 of a lognormal fitted robustly: the median of the logs, and their spread from the median
    absolute deviation (0.6745 of a standard deviation for a normal)."""
    logs = [math.log(max(v, 0.01)) for v in values]
    mu = statistics.median(logs)
    sigma = statistics.median(abs(x - mu) for x in logs) / 0.6745
    return {"p50": round(math.exp(mu), 2), "p95": round(math.exp(mu + Z95 * sigma), 2)}


def lognormal_from_streams(streams: list[tuple[float, int]]) -> dict[str, float]:
    """p50 and p95 of the per-token lognormal, by moments: the mean from each stream's whole span and its
    spread from how much the streams' mean gaps vary. Spans survive events that arrive batched (a busy
    network or host), where single gaps do not."""
    gaps = sum(n for _, n in streams)
    mean = sum(span for span, _ in streams) / gaps
    variance = sum(n * (span / n - mean) ** 2 for span, n in streams) / max(1, len(streams) - 1)
    sigma2 = math.log1p(variance / mean ** 2)
    mu = math.log(mean) - sigma2 / 2
    return {"p50": round(math.exp(mu), 2), "p95": round(math.exp(mu + Z95 * math.sqrt(sigma2)), 2)}


def prefill_slope(samples: list[tuple[float, int]]) -> float | None:
    """ms per input token, or None when the data cannot show it."""
    points = [(tokens, ms) for ms, tokens in samples if tokens >= 0]
    if len(points) < MIN_PREFILL_SAMPLES or len({x for x, _ in points}) < 3:
        return None
    xs, ys = [float(x) for x, _ in points], [y for _, y in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sxx
    residual = sum((y - mean_y - slope * (x - mean_x)) ** 2 for x, y in zip(xs, ys, strict=True)) / (len(xs) - 2)
    error = math.sqrt(residual / sxx) if sxx else math.inf
    return slope if slope > 0 and slope > MIN_T_STATISTIC * error else None


def fit_model(name: str, samples: Samples, shipped: Profile | None) -> tuple[dict[str, Any], str]:
    """The profile entry for one model, and a line saying what each figure rests on."""
    base: dict[str, Any] = shipped.model_dump(mode="json", exclude_none=True) if shipped else {"id": name}
    base.update(id=name)
    old = shipped.timing if shipped else None
    notes = []
    slope = prefill_slope(samples.ttft)
    if slope is not None:
        prefill = round(1000.0 / slope, 1)
        notes.append(f"prefill {prefill} tokens/s ({len(samples.ttft)} samples)")
    else:
        prefill = old.prefill_tokens_per_s if old else 40_000.0
        notes.append(f"prefill {prefill} tokens/s kept ({len(samples.ttft)} samples too few or too alike to "
                     f"fit it)")
    slope = slope or 1000.0 / prefill
    ttft = [ms - slope * max(tokens, 0) for ms, tokens in samples.ttft]
    if not ttft:
        raise ValueError(f"{name}: no streamed cassette without reasoning to fit TTFT from")
    if not samples.itl:
        raise ValueError(f"{name}: no stream with two visible deltas to fit the inter-token latency from")
    ttft_fit, itl_fit = lognormal(ttft), lognormal_from_streams(samples.itl)
    gaps = sum(n for _, n in samples.itl)
    notes[:0] = [f"TTFT p50 {ttft_fit['p50']} ms p95 {ttft_fit['p95']} ms ({len(ttft)} samples)",
                 f"ITL p50 {itl_fit['p50']} ms p95 {itl_fit['p95']} ms ({gaps} gaps in {len(samples.itl)} streams)"]
    reasoning_rates = [tokens / ((visible - ttft_fit["p50"] - slope * max(inputs, 0)) / 1000.0)
                       for visible, inputs, tokens in samples.reasoning
                       if visible - ttft_fit["p50"] - slope * max(inputs, 0) > 0]
    if reasoning_rates:
        reasoning = round(statistics.median(reasoning_rates), 1)
        notes.append(f"reasoning {reasoning} tokens/s ({len(reasoning_rates)} samples)")
    else:
        reasoning = old.reasoning_tokens_per_s if old else 100.0
        notes.append(f"reasoning {reasoning} tokens/s kept (no samples)")
    timing: dict[str, Any] = {
        "ttft_ms": {"kind": "lognormal", **ttft_fit},
        "itl_ms": {"kind": "lognormal", **itl_fit},
        "prefill_tokens_per_s": prefill,
        "reasoning_tokens_per_s": reasoning,
    }
    if old and old.concurrency:
        timing["concurrency"] = old.concurrency.model_dump(mode="json")
    base["timing"] = timing
    Profile.model_validate(base)  # what --profiles-dir will load
    return base, f"{name}: " + "; ".join(notes)


def fit(directory: Path, profiles_dirs: list[Path] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The profiles file's content, and one line per model."""
    by_model: dict[str, Samples] = defaultdict(Samples)
    cassettes = load(directory)
    for cassette in cassettes:
        by_model[cassette.model].add(cassette)
    catalog = load_catalog(profiles_dirs or [DEFAULT_PROFILES_DIR])
    entries, lines = [], []
    for name in sorted(by_model):
        entry, line = fit_model(name, by_model[name], catalog.get(name))
        entries.append(entry)
        lines.append(line)
    if not entries:
        raise ValueError(f"{directory}: no cassettes")
    return {"models": entries}, lines


def fit_command(directory: Path, output: Path) -> int:
    try:
        content, lines = fit(directory)
    except (ValueError, OSError) as exc:
        print(f"llmsim: profile fit: {exc}", file=sys.stderr)
        return 2
    header = f"# Fitted by `llmsim profile fit` from the cassettes in {directory}.\n" + "".join(
        f"# {line}\n" for line in lines)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(header + yaml.safe_dump(content, sort_keys=False))
    for line in lines:
        print(line)
    print(f"wrote {output}")
    return 0
