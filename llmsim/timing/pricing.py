"""What a response would have cost at its model's list prices (USD per 1M tokens)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

COST_HEADER = "x-llmsim-cost-usd"


class Pricing(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    input: float = Field(ge=0)
    cached_input: float | None = Field(None, ge=0)  # unset: cached tokens bill as input
    output: float = Field(ge=0)  # reasoning tokens are output tokens

    def cost(self, usage: dict[str, Any]) -> float:
        """USD for a Response's `usage` object."""
        cached = (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
        uncached = usage["input_tokens"] - cached
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return (uncached * self.input + cached * cached_rate + usage["output_tokens"] * self.output) / 1_000_000


def format_usd(amount: float) -> str:
    return f"{amount:.8f}".rstrip("0").rstrip(".") or "0"


def response_cost(pricing: Pricing | None, response: dict[str, Any]) -> str | None:
    """The cost of a finished Response as a header value; None while usage is unknown or unpriced."""
    usage = response.get("usage")
    if pricing is None or not usage:
        return None
    return format_usd(pricing.cost(usage))
