"""The Response object as the SDK's `Response` type defines it, echoing the request."""

from __future__ import annotations

import time
from typing import Any

from llmsim.responses.schema import CreateRequest
from llmsim.timing.profiles import Profile


def new_response(request: CreateRequest, profile: Profile, response_id: str, tools: list[dict[str, Any]],
                 effort: str | None, summary: str | None) -> dict[str, Any]:
    """An in-progress Response with every field of the SDK type, unused ones null."""
    conversation = request.conversation_id
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "background": request.background,
        "completed_at": None,
        "conversation": {"id": conversation} if conversation else None,
        "error": None,
        "incomplete_details": None,
        "instructions": request.instructions if isinstance(request.instructions, str | None) else [
            item.model_dump(by_alias=True, exclude_none=True) for item in request.instructions],
        "max_output_tokens": request.max_output_tokens,
        "max_tool_calls": request.max_tool_calls,
        "model": profile.echo_name,
        "output": [],
        "parallel_tool_calls": request.parallel_tool_calls,
        "previous_response_id": request.previous_response_id,
        "prompt": request.prompt,
        "prompt_cache_key": request.prompt_cache_key,
        "prompt_cache_retention": request.prompt_cache_retention,
        "prompt_cache_options": request.prompt_cache_options,
        "prompt_cache_diagnostics": None,
        "reasoning": {"effort": effort, "summary": summary},
        "safety_identifier": request.safety_identifier,
        "service_tier": "default" if request.service_tier in (None, "auto") else request.service_tier,
        "store": request.store,
        "temperature": 1.0 if request.temperature is None else request.temperature,
        "text": request.text.model_dump(by_alias=True, exclude_none=True),
        "tool_choice": request.tool_choice_data,
        "tools": tools,
        "top_logprobs": request.top_logprobs or 0,
        "top_p": 1.0 if request.top_p is None else request.top_p,
        "truncation": request.truncation,
        "usage": None,
        "user": request.user,
        "metadata": request.metadata or {},
        "access_programs": request.access_programs,
        "image": request.image,
        "input_transformations": None,
        "moderation": None,
        "tool_usage": None,
    }
