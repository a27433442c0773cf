"""The same agent with the OpenAI Agents SDK, against LLMSim.

Needs the OpenAI Agents SDK (`pip install openai-agents`, or the `examples` extra: `pip install -e ".[examples]"`).

    python examples/agents_sdk.py                 # starts its own LLMSim on a free port
    LLMSIM_BASE_URL=http://127.0.0.1:8080/openai/v1 python examples/agents_sdk.py

The Agents SDK drives the Responses API itself: it sends the tool's strict schema, runs
the tool when the model calls it, and sends the output back until the model answers.
"""

from __future__ import annotations

import json
import os
from contextlib import ExitStack

from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from llmsim.testing import ServerProcess


@function_tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    print(f"tool call: get_weather(city={city!r})")
    return json.dumps({"city": city, "temperature_c": 21, "sky": "clear"})


def main() -> None:
    set_tracing_disabled(True)  # traces would go to api.openai.com
    with ExitStack() as stack:
        base_url = os.environ.get("LLMSIM_BASE_URL") or stack.enter_context(ServerProcess("--speed", "0")).base_url
        client = AsyncOpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "sk-llmsim"))
        agent = Agent(name="weather", instructions="Answer weather questions with the tool.",
                      model=OpenAIResponsesModel(model="gpt-4o", openai_client=client), tools=[get_weather])
        result = Runner.run_sync(agent, "What's the weather in Paris?")
        print("answer:", result.final_output)


if __name__ == "__main__":
    main()
