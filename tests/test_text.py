"""The simulator's text: prose shaped by the question, echo, lorem and faker modes; exact usage; determinism."""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable

import httpx
import openai
import pytest

from llmsim import tokens
from llmsim.backends.sim import text
from llmsim.testing import ServerProcess

FENCE = re.compile(r"```(\w+)\n(.*?)\n```", re.S)


@pytest.fixture
def echo_server(shared_server: Callable[..., ServerProcess]) -> ServerProcess:
    """A seed header or the server's flags fix every text asked of these servers, so the module's tests share them
    (a start costs a core 1.5 s): the session's server, and this one, echoing by default and hashing strings with
    another seed than its parent's (the test of the same text across processes names its mode on every request)."""
    return shared_server("--text-mode", "echo", env={"PYTHONHASHSEED": "123"})


def answer(client: openai.OpenAI, question: str, mode: str | None = None, seed: str = "1", **kwargs: object) -> str:
    headers = {"X-LLMSim-Seed": seed, **({"X-LLMSim-Text-Mode": mode} if mode else {})}
    return client.responses.create(model="gpt-4o", input=question, extra_headers=headers, **kwargs).output_text


@pytest.mark.parametrize("question", [
    "Write a Python function that reverses a string",
    "Can you implement a function to parse ISO dates in Python?",
    "write code to merge two sorted lists",
])
@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_python_code_requests_get_a_fenced_block_that_parses(client: openai.OpenAI, question: str, seed: str) -> None:
    blocks = FENCE.findall(answer(client, question, seed=seed, text={"verbosity": "high"}))
    assert [language for language, _ in blocks] == ["python"]
    ast.parse(blocks[0][1])


@pytest.mark.parametrize(("question", "language", "name"), [
    ("Write a function in JavaScript that sorts users by age", "javascript", "sortUsers"),
    ("Give me a bash script to clean old logs", "bash", "clean_old_logs"),
    ("Write a Go function that counts words", "go", "countWords"),
    ("Implement a Rust function to parse headers", "rust", "parse_headers"),
])
def test_code_in_the_language_asked_for_named_after_the_request(client: openai.OpenAI, question: str, language: str,
                                                                 name: str) -> None:
    blocks = FENCE.findall(answer(client, question))
    assert blocks and blocks[0][0] == language
    assert name in blocks[0][1]


def test_steps_get_a_numbered_list(client: openai.OpenAI) -> None:
    reply = answer(client, "How do I set up Redis replication?")
    numbers = re.findall(r"^(\d+)\. \S", reply, re.M)
    assert len(numbers) >= 3 and numbers == [str(i) for i in range(1, len(numbers) + 1)]


def test_lists_get_bullets(client: openai.OpenAI) -> None:
    reply = answer(client, "List some tips for writing clean React components")
    assert len(re.findall(r"^- \*\*[^*]+\*\* ?\S", reply, re.M)) >= 3


@pytest.mark.parametrize("question", ["Compare PostgreSQL and MongoDB for analytics", "TCP vs UDP: which is better?"])
def test_comparisons_get_a_markdown_table_of_both(client: openai.OpenAI, question: str) -> None:
    reply = answer(client, question)
    rows = [line for line in reply.splitlines() if line.startswith("|")]
    assert len(rows) >= 5 and re.fullmatch(r"\|(---\|){3}", rows[1])
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    first, second = ("PostgreSQL", "MongoDB") if "Postgre" in question else ("TCP", "UDP")
    assert header == ["Aspect", first, second]
    assert all(row.count("|") == 4 for row in rows)


@pytest.mark.parametrize(("question", "nouns"), [
    ("What is Kubernetes and why do teams use it?", ["Kubernetes"]),
    ("Tell me about photosynthesis in desert plants", ["photosynthesis", "desert plants"]),
    ("How should I think about database indexes?", ["database indexes"]),
    ("Explain vector clocks", ["vector clocks"]),
    ("Why do volcanoes erupt near tectonic plate boundaries?", ["volcanoes", "tectonic plate boundaries"]),
    ("What causes inflation in modern economies?", ["inflation", "modern economies"]),
])
def test_answers_mention_the_questions_key_nouns(client: openai.OpenAI, question: str, nouns: list[str]) -> None:
    for seed in ("1", "2"):
        reply = answer(client, question, seed=seed, text={"verbosity": "medium"})
        for noun in nouns:
            assert noun.lower() in reply.lower(), (noun, reply)


@pytest.mark.parametrize(("question", "garbled"), [
    ("Why do volcanoes erupt near tectonic plate boundaries?", "erupt near"),
    ("What causes inflation in modern economies?", "causes inflation"),
    ("Why is Rust popular?", "Rust popular"),
])
def test_topics_are_noun_phrases_not_cut_clauses(client: openai.OpenAI, question: str, garbled: str) -> None:
    for seed in ("1", "2", "3"):
        reply = answer(client, question, seed=seed)
        assert garbled not in reply, reply
        assert not re.search(r"\b(?:volcanoes|economies) (?:is|works|depends)\b", reply), reply


def test_a_question_is_answered_first(client: openai.OpenAI) -> None:
    reply = answer(client, "Why is Rust popular?", text={"verbosity": "low"})
    first_sentence = re.split(r"(?<=[.!?])\s", reply, maxsplit=1)[0]
    assert "Rust" in first_sentence and not first_sentence.startswith(("#", "-", "|", "1."))


def test_prose_reads_as_sentences_not_word_salad(client: openai.OpenAI) -> None:
    reply = answer(client, "Tell me about tea", text={"verbosity": "high"})
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", reply) if s]
    assert len(sentences) >= 5
    assert all(s[0].isupper() and s[-1] in ".!?:" for s in sentences)


@pytest.mark.parametrize("verbosity", ["low", "high"])
def test_verbosity_still_sets_the_length(client: openai.OpenAI, verbosity: str) -> None:
    lengths = [client.responses.create(model="gpt-4o", input="Tell me about tea", text={"verbosity": verbosity},
                                       extra_headers={"X-LLMSim-Seed": str(seed)}).usage.output_tokens
               for seed in range(5)]
    assert all(12 <= n <= 120 for n in lengths) if verbosity == "low" else all(n >= 90 for n in lengths)


def test_max_output_tokens_cuts_the_answer(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="Write a Python function that reverses a string",
                                       max_output_tokens=20, extra_headers={"X-LLMSim-Seed": "1"})
    assert response.status == "incomplete" and response.usage.output_tokens <= 20


@pytest.mark.parametrize("mode", ["prose", "lorem", "faker"])
@pytest.mark.parametrize("question", ["Write a Python function that reverses a string", "Compare A and B",
                                      "How do I bake bread? Ünïcödé ✓ 日本語", "hi"])
def test_usage_counts_the_tokens_of_the_text_exactly(client: openai.OpenAI, mode: str, question: str) -> None:
    for model, encoding in (("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base")):
        response = client.responses.create(model=model, input=question, extra_headers={"X-LLMSim-Text-Mode": mode})
        assert response.usage.output_tokens == tokens.count(response.output_text, encoding)


@pytest.mark.parametrize("question", ["What is the capital of France?", "  spaces\n\nand lines\t ✓ 日本語  ",
                                      'JSON {"a": [1, 2]} and `code`'])
def test_echo_returns_the_last_user_message_exactly(client: openai.OpenAI, question: str) -> None:
    headers = {"X-LLMSim-Text-Mode": "echo"}
    items = [{"role": "user", "content": "an earlier question"}, {"role": "assistant", "content": "an answer"},
             {"role": "user", "content": question}]
    plain = client.responses.create(model="gpt-4o", input=items, extra_headers=headers)
    with client.responses.stream(model="gpt-4o", input=items, extra_headers=headers) as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        streamed = stream.get_final_response()
    assert plain.output_text == streamed.output_text == "".join(deltas) == question
    assert plain.usage.output_tokens == tokens.count(question, "o200k_base")


def test_echo_as_the_servers_mode_and_over_chat_completions(echo_server: ServerProcess,
                                                            sdk_client: Callable[..., openai.OpenAI]) -> None:
    client = sdk_client(echo_server)
    assert client.responses.create(model="gpt-4o", input="repeat after me").output_text == "repeat after me"
    chat = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "say this"}])
    assert chat.choices[0].message.content == "say this"
    prose = client.responses.create(model="gpt-4o", input="repeat after me",
                                    extra_headers={"X-LLMSim-Text-Mode": "prose"})
    assert prose.output_text != "repeat after me"  # the header overrides the server's mode


def test_lorem_and_faker_modes(client: openai.OpenAI) -> None:
    lorem = answer(client, "Tell me about tea", mode="lorem")
    assert lorem.startswith("Lorem ipsum dolor sit amet")
    assert set(re.findall(r"[a-z]+", lorem.lower())) <= set(text.phrases.LOREM_WORDS)
    faker = answer(client, "Tell me about tea", mode="faker")
    assert faker != answer(client, "Tell me about tea")
    assert all(s[0].isupper() and s.endswith(".") for s in re.split(r"(?<=\.) ", faker))


def test_bad_text_mode_header_is_a_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        answer(client, "hi", mode="shakespeare")
    assert error.value.body["param"] == "X-LLMSim-Text-Mode"


def test_reasoning_summary_reads_like_a_plan(client: openai.OpenAI) -> None:
    response = client.responses.create(model="o3", input="How do I set up Redis replication?",
                                       reasoning={"effort": "high", "summary": "detailed"})
    summary = response.output[0].summary[0].text
    assert summary.startswith("Identify the key steps for Redis replication.")
    assert summary.endswith(".")


@pytest.mark.parametrize("mode", ["prose", "lorem", "faker", "echo"])
def test_same_seed_same_text_across_processes(server: ServerProcess, echo_server: ServerProcess, mode: str) -> None:
    def run(server: ServerProcess) -> list[str]:
        texts = []
        for question in ("Write a Python function that adds numbers", "Tell me about tea", "Compare X and Y"):
            body = {"model": "o3", "input": question, "reasoning": {"summary": "auto"}}
            data = httpx.post(f"{server.base_url}/responses", json=body,
                              headers={"X-LLMSim-Seed": "11", "X-LLMSim-Text-Mode": mode}).json()
            texts += [part["text"] for item in data["output"] for part in item.get("summary", [])]
            texts += [part["text"] for item in data["output"] for part in item.get("content") or []]
        return texts

    first, second = server, echo_server
    assert run(first) == run(second)


def test_pieces_tokenize_exactly_as_the_whole_text() -> None:
    """The cached pieces' ids are what tiktoken gives for the whole answer, for every shape and encoding."""
    questions = ["Write a Python function that reverses a string", "How do I set up Redis replication?",
                 "List some tips for React", "Compare PostgreSQL and MongoDB", "Why is Rust popular?",
                 "Tell me about tea", "write a function in typescript to count words", "hi"]
    for encoding in ("o200k_base", "cl100k_base"):
        enc = tokens.encoding(encoding)
        for question in questions:
            for seed in range(8):
                for mode in ("prose", "lorem"):
                    composed = text.compose(mode, question, random.Random(seed).randint(12, 400),
                                            random.Random(seed), encoding)
                    assert composed.tokens == len(enc.encode_ordinary(composed.text)), (question, seed, mode)


def test_echo_over_websocket_mode(client: openai.OpenAI) -> None:
    with client.responses.connect(extra_headers={"X-LLMSim-Text-Mode": "echo"}) as connection:
        connection.response.create(model="gpt-4o", input="echo me over the socket")
        completed = next(event for event in connection if event.type == "response.completed")
    assert completed.response.output_text == "echo me over the socket"
