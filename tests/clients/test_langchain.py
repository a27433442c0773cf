"""LangChain against the plain simulator, with no scenario: JSON mode follows the keys and types the prompt
names, with_structured_output validates, and a classic ReAct text agent calls its tool and gives a Final
Answer its parser accepts."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("langchain_classic", "langchain_openai")

REACT_TEMPLATE = """Answer the following questions as best you can. You have access to the following tools:

{tools}

Use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action: the action to take, should be one of [{tool_names}]
Action Input: the input to the action
Observation: the result of the action
... (this Thought/Action/Action Input/Observation can repeat N times)
Thought: I now know the final answer
Final Answer: the final answer to the original input question

Begin!

Question: {input}
Thought:{agent_scratchpad}"""


class Joke(BaseModel):
    setup: str
    punchline: str
    rating: int


def chat_model(llmsim: LLMSim, responses: bool = False):  # type: ignore[no-untyped-def]
    from langchain_openai import ChatOpenAI
    return ChatOpenAI(model="gpt-4o", base_url=llmsim.base_url, api_key="sk-test", use_responses_api=responses,
                      max_retries=0)


def test_json_mode_follows_the_keys_and_types_asked_in_words(llmsim: LLMSim) -> None:
    structured = chat_model(llmsim).with_structured_output(None, method="json_mode")
    joke = structured.invoke("Tell me a joke about cats. Respond with a JSON object with the keys 'setup', "
                             "'punchline' and 'rating', where rating is an integer from 1 to 10.")
    assert set(joke) == {"setup", "punchline", "rating"} and isinstance(joke["rating"], int)
    assert all(isinstance(joke[k], str) and joke[k] for k in ("setup", "punchline"))


@pytest.mark.parametrize("method", ["function_calling", "json_schema"])
@pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])
def test_with_structured_output_validates(llmsim: LLMSim, method: str, responses: bool) -> None:
    joke = chat_model(llmsim, responses).with_structured_output(Joke, method=method).invoke("Tell me a joke")
    assert isinstance(joke, Joke)


def test_react_text_agent_calls_the_tool_and_gives_a_final_answer(llmsim: LLMSim) -> None:
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.prompts import PromptTemplate
    from langchain_core.tools import tool

    called: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        called.append(city)
        return f"sunny and 21 C in {city}"

    agent = create_react_agent(chat_model(llmsim), [get_weather], PromptTemplate.from_template(REACT_TEMPLATE))
    executor = AgentExecutor(agent=agent, tools=[get_weather], max_iterations=4, handle_parsing_errors=False)
    result = executor.invoke({"input": "What is the weather in Paris?"})
    assert called == ["Paris"]
    assert "sunny and 21 C in Paris" in result["output"]
