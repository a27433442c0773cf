"""An agent loop with function tools, written with the openai SDK, against LLMSim.

Needs the openai SDK (`pip install openai`, or the `examples` extra: `pip install -e ".[examples]"`).

    python examples/agent_loop.py                 # starts its own LLMSim on a free port
    LLMSIM_BASE_URL=http://127.0.0.1:8080/openai/v1 python examples/agent_loop.py

The model asks for tools; the loop runs them and sends the outputs back with
previous_response_id until the model answers in text.
"""

from __future__ import annotations

import json
import os
from contextlib import ExitStack

from openai import OpenAI

from llmsim.testing import ServerProcess

TOOLS = [{
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                   "additionalProperties": False},
    "strict": True,
}]


def get_weather(city: str) -> str:
    return json.dumps({"city": city, "temperature_c": 21, "sky": "clear"})


def run(client: OpenAI, question: str, max_turns: int = 5) -> str:
    response = client.responses.create(model="gpt-4o", input=question, tools=TOOLS)
    for _ in range(max_turns):
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        outputs = []
        for call in calls:
            print(f"tool call: {call.name}({call.arguments})")
            outputs.append({"type": "function_call_output", "call_id": call.call_id,
                            "output": get_weather(**json.loads(call.arguments))})
        response = client.responses.create(model="gpt-4o", previous_response_id=response.id, input=outputs,
                                           tools=TOOLS)
    raise RuntimeError(f"no answer after {max_turns} turns")


def main() -> None:
    with ExitStack() as stack:
        base_url = os.environ.get("LLMSIM_BASE_URL") or stack.enter_context(ServerProcess("--speed", "0")).base_url
        client = OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "sk-llmsim"))
        print("answer:", run(client, "What's the weather in Paris?"))


if __name__ == "__main__":
    main()
