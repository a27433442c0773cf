"""The Gemini API against a real server with google-genai (its default /v1 and /v1beta, the /gemini prefix): generate,
stream, automatic function calling, JSON by schema, thinking, countTokens, embeddings, models, a 429 retried; and
raw HTTP for what the SDK hides (the JSON-array stream, Google's error envelope, `?key=`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import httpx
import numpy as np
import pytest

from llmsim.pytest_plugin import LLMSim
from llmsim.testing import ServerProcess

genai = pytest.importorskip("google.genai")
from google.genai import errors, types  # noqa: E402

MODEL = "gemini-2.5-flash"
QUESTION = {"contents": [{"role": "user", "parts": [{"text": "What is the capital of France?"}]}]}
RETRIED = ("--fault", "rate_limit;first=1;retry_after=0.2;models=gemini-2.0-flash-lite")
KEYED = ("--api-key", "goog-right")


@pytest.fixture
def client(server: ServerProcess) -> Iterator[genai.Client]:
    made = genai.Client(api_key="goog-test", http_options=types.HttpOptions(base_url=server.url))
    yield made
    made.close()


def test_generate_answers_with_exact_usage(client: genai.Client) -> None:
    answer = client.models.generate_content(model=MODEL, contents="What is the capital of France?")
    usage = answer.usage_metadata
    assert answer.text and answer.candidates[0].finish_reason == types.FinishReason.STOP
    assert answer.model_version == MODEL and len(answer.response_id) == 22
    assert usage.prompt_token_count > 0 and usage.candidates_token_count > 0
    assert usage.total_token_count == usage.prompt_token_count + usage.candidates_token_count + \
        (usage.thoughts_token_count or 0)
    assert usage.thoughts_token_count  # 2.5 Flash thinks unless told not to
    counted = client.models.count_tokens(model=MODEL, contents="What is the capital of France?")
    assert counted.total_tokens == usage.prompt_token_count
    cost = float(answer.sdk_http_response.headers["x-llmsim-cost-usd"])  # gemini-2.5-flash: $0.30 in, $2.50 out
    output = usage.candidates_token_count + usage.thoughts_token_count
    assert cost == pytest.approx((usage.prompt_token_count * 0.30 + output * 2.50) / 1e6, rel=1e-6)


def test_thinking_off_and_thoughts_shown(client: genai.Client) -> None:
    off = client.models.generate_content(model=MODEL, contents="Hi", config=types.GenerateContentConfig(
        thinking_config=types.ThinkingConfig(thinking_budget=0)))
    assert not off.usage_metadata.thoughts_token_count
    shown = client.models.generate_content(model=MODEL, contents="Explain tides", config=types.GenerateContentConfig(
        thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=2048)))
    parts = shown.candidates[0].content.parts
    assert parts[0].thought and parts[0].text and not parts[-1].thought and parts[-1].text
    assert 0 < shown.usage_metadata.thoughts_token_count <= 2048
    with pytest.raises(errors.ClientError) as refused:
        client.models.generate_content(model="gemini-2.5-pro", contents="Hi", config=types.GenerateContentConfig(
            thinking_config=types.ThinkingConfig(thinking_budget=0)))
    assert refused.value.code == 400 and refused.value.status == "INVALID_ARGUMENT"
    assert "only works in thinking mode" in refused.value.message


def test_stream_chunks_end_with_the_finish_and_usage(client: genai.Client) -> None:
    chunks = list(client.models.generate_content_stream(model="gemini-2.0-flash", contents="Tell me about Paris"))
    assert len(chunks) >= 2 and len({chunk.response_id for chunk in chunks}) == 1
    text = "".join(chunk.text or "" for chunk in chunks)
    assert text and chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert all(chunk.candidates[0].finish_reason is None for chunk in chunks[:-1])
    assert chunks[-1].usage_metadata.candidates_token_count > 0


def get_weather(city: str) -> str:
    """Returns today's weather in a city.

    Args:
        city: the city's name
    """
    get_weather.calls.append(city)  # type: ignore[attr-defined]
    return f"Sunny and 21 degrees in {city}"


def test_automatic_function_calling_runs_the_python_function(client: genai.Client) -> None:
    get_weather.calls = []  # type: ignore[attr-defined]
    answer = client.models.generate_content(model=MODEL, contents="What is the weather in Paris? Use the tool.",
                                            config=types.GenerateContentConfig(tools=[get_weather]))
    assert get_weather.calls, "the SDK ran no function"  # type: ignore[attr-defined]
    history = answer.automatic_function_calling_history
    assert any(part.function_response for content in history for part in content.parts or [])
    assert answer.text and not answer.function_calls


def test_parallel_calls_and_forced_choice(server: ServerProcess) -> None:
    declarations = [{"name": name, "description": f"Look up {name}", "parameters": {
        "type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}}
        for name in ("get_weather", "get_time")]
    body = {**QUESTION, "tools": [{"functionDeclarations": declarations}, {"googleSearch": {}}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_time"]}}}
    answer = httpx.post(f"{server.url}/v1beta/models/{MODEL}:generateContent", json=body).json()
    calls = [part["functionCall"] for part in answer["candidates"][0]["content"]["parts"] if "functionCall" in part]
    assert calls and {call["name"] for call in calls} == {"get_time"} and "city" in calls[0]["args"]
    assert "thoughtSignature" in answer["candidates"][0]["content"]["parts"][0]
    both = {"contents": [{"role": "user", "parts": [{"text": "What is the weather and the local time in Paris?"}]}],
            "tools": [{"functionDeclarations": declarations}], "toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}
    streamed = httpx.post(f"{server.url}/v1beta/models/gemini-2.0-flash:streamGenerateContent", params={"alt": "sse"},
                          json=both).text
    chunks = [json.loads(line[6:]) for line in streamed.splitlines() if line.startswith("data: ")]
    parallel = [chunk["candidates"][0]["content"]["parts"] for chunk in chunks
                if any("functionCall" in part for part in chunk["candidates"][0]["content"]["parts"])]
    assert len(parallel) == 1 and {part["functionCall"]["name"] for part in parallel[0]} == {"get_weather", "get_time"}


def test_json_schema_answer(client: genai.Client) -> None:
    schema = types.Schema(type=types.Type.OBJECT, properties={
        "name": types.Schema(type=types.Type.STRING), "population": types.Schema(type=types.Type.INTEGER),
        "landmarks": types.Schema(type=types.Type.ARRAY, items=types.Schema(type=types.Type.STRING))},
        required=["name", "population", "landmarks"])
    answer = client.models.generate_content(model=MODEL, contents="Describe Paris", config=types.GenerateContentConfig(
        response_mime_type="application/json", response_schema=schema))
    data = json.loads(answer.text)
    assert isinstance(data["name"], str) and isinstance(data["population"], int)
    assert all(isinstance(item, str) for item in data["landmarks"])
    by_json_schema = client.models.generate_content(model=MODEL, contents="A city", config=types.GenerateContentConfig(
        response_mime_type="application/json", response_json_schema={
            "type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]}},
            "required": ["city"]}))
    assert json.loads(by_json_schema.text)["city"] in ("Paris", "Rome")


def test_embeddings_find_the_answering_document(client: genai.Client) -> None:
    documents = ["Paris is the capital of France.", "The mitochondria is the powerhouse of the cell.",
                 "Python was created by Guido van Rossum."]
    embedded = client.models.embed_content(model="gemini-embedding-001", contents=documents,
                                           config=types.EmbedContentConfig(task_type="RETRIEVAL_DOCUMENT"))
    assert [len(e.values) for e in embedded.embeddings] == [3072] * 3
    question = client.models.embed_content(model="gemini-embedding-001", contents="Who created Python?",
                                           config=types.EmbedContentConfig(output_dimensionality=768))
    assert len(question.embeddings[0].values) == 768
    full = np.array([e.values for e in embedded.embeddings])[:, :768]
    assert int(np.argmax(full @ np.array(question.embeddings[0].values))) == 2
    small = client.models.embed_content(model="text-embedding-004", contents="hello")
    assert len(small.embeddings[0].values) == 768


def test_models_list_and_get(client: genai.Client) -> None:
    names = [model.name for model in client.models.list()]
    assert "models/gemini-2.5-pro" in names and "models/gemini-embedding-001" in names
    assert not any("gpt" in name or "claude" in name for name in names)
    model = client.models.get(model="gemini-2.5-flash")
    assert model.input_token_limit == 1048576 and "generateContent" in model.supported_actions
    with pytest.raises(errors.ClientError) as missing:
        client.models.generate_content(model="gemini-embedding-001", contents="hi")
    assert missing.value.code == 404 and missing.value.status == "NOT_FOUND"
    assert "is not supported for generateContent" in missing.value.message


def test_a_429_is_retried(shared_server: Callable[..., ServerProcess]) -> None:
    server = shared_server(*RETRIED)
    retrying = genai.Client(api_key="k", http_options=types.HttpOptions(
        base_url=server.url, retry_options=types.HttpRetryOptions(attempts=3, initial_delay=0.1, max_delay=0.5)))
    answer = retrying.models.generate_content(model="gemini-2.0-flash-lite", contents="Hi")
    assert answer.text
    refused = httpx.post(f"{server.url}/v1beta/models/gemini-2.0-flash-lite:generateContent", json=QUESTION,
                         headers={"X-LLMSim-Fault": "rate_limit"})
    error = refused.json()["error"]
    assert refused.status_code == 429 and error["status"] == "RESOURCE_EXHAUSTED" and error["code"] == 429
    retry = next(d for d in error["details"] if d["@type"].endswith("RetryInfo"))
    assert retry["retryDelay"].endswith("s")


def test_json_array_stream_and_sse(server: ServerProcess) -> None:
    url = f"{server.url}/v1beta/models/{MODEL}:streamGenerateContent"
    array = httpx.post(url, json=QUESTION)
    assert array.headers["content-type"].startswith("application/json")
    chunks = json.loads(array.text)
    assert isinstance(chunks, list) and chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    sse = httpx.post(url, params={"alt": "sse"}, json=QUESTION)
    assert sse.headers["content-type"].startswith("text/event-stream")
    frames = [json.loads(line[6:]) for line in sse.text.splitlines() if line.startswith("data: ")]
    assert frames[-1]["usageMetadata"]["totalTokenCount"] > 0


def test_google_error_envelope(server: ServerProcess) -> None:
    url = f"{server.url}/gemini/v1beta/models/{MODEL}:generateContent"
    cases = [({"contents": []}, "contents is not specified"),
             ({"contents": [{"role": "user", "parts": []}]}, "parts must not be empty"),
             ({**QUESTION, "generationConfig": {"temperature": "hot"}}, "generation_config.temperature"),
             ({**QUESTION, "generationConfig": {"maxOutputTokens": 10_000_000}}, "max_output_tokens"),
             ({**QUESTION, "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["x"]}},
               "tools": [{"functionDeclarations": [{"name": "y"}]}]}, "x is not a declared function"),
             ({**QUESTION, "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": "x"}},
              "the schema must be an object"),
             ({"contents": [{"parts": [{"text": "a", "inlineData": {"mimeType": "image/png", "data": "eA=="}}]}]},
              "only one of text, inline_data may be set"),
             ([1], "Expected an object")]
    counted = url.replace("generateContent", "countTokens")
    for (body, words), where in [*zip(cases, [url] * len(cases), strict=True), (cases[-2], counted)]:
        answer = httpx.post(where, json=body)
        error = answer.json()["error"]
        assert answer.status_code == 400 and error["status"] == "INVALID_ARGUMENT" and error["code"] == 400, error
        assert words in error["message"], (words, error)
    strict = httpx.post(url, json={**QUESTION, "generationConfig": {"tempratur": 1}},
                        headers={"X-LLMSim-Strict-Params": "true"}).json()["error"]
    assert strict["message"] == ('Invalid JSON payload received. Unknown name "tempratur" at \'generation_config\': '
                                 'Cannot find field.')
    lenient = httpx.post(url, json={**QUESTION, "generationConfig": {"tempratur": 1}})
    assert lenient.status_code == 200 and "tempratur" in lenient.headers["x-llmsim-warnings"]
    missing = httpx.post(f"{server.url}/v1beta/models/no-such-thing:generateContent", json=QUESTION)
    assert missing.status_code in (200, 404)  # an unknown name is placed by family unless --strict-models
    unavailable = httpx.post(url, json=QUESTION, headers={"X-LLMSim-Fault": "overloaded"}).json()["error"]
    assert unavailable["status"] == "UNAVAILABLE" and unavailable["message"] == \
        "The model is overloaded. Please try again later."


def test_keys_from_the_header_or_the_query(shared_server: Callable[..., ServerProcess]) -> None:
    server = shared_server(*KEYED)
    url = f"{server.url}/v1beta/models/{MODEL}:generateContent"
    assert httpx.post(url, json=QUESTION, headers={"x-goog-api-key": "goog-right"}).status_code == 200
    assert httpx.post(url, params={"key": "goog-right"}, json=QUESTION).status_code == 200
    wrong = httpx.post(url, params={"key": "goog-wrong"}, json=QUESTION)
    assert wrong.status_code == 400 and wrong.json()["error"]["message"] == \
        "API key not valid. Please pass a valid API key."
    assert wrong.json()["error"]["details"][0]["reason"] == "API_KEY_INVALID"
    missing = httpx.post(url, json=QUESTION)
    assert missing.status_code == 403 and missing.json()["error"]["status"] == "PERMISSION_DENIED"
    listed = httpx.get(f"{server.url}/v1/models", headers={"x-goog-api-key": "goog-right"}).json()
    assert listed["models"][0]["name"].startswith("models/")  # google-genai's listing at its default /v1
    refused = httpx.get(f"{server.url}/v1/models", headers={"x-goog-api-key": "goog-wrong"})
    assert refused.json()["error"]["message"] == "API key not valid. Please pass a valid API key."
    openai_style = httpx.get(f"{server.url}/v1/models", headers={"Authorization": "Bearer goog-right"}).json()
    assert openai_style["object"] == "list" and openai_style["data"][0]["object"] == "model"  # /v1 stays OpenAI's


def test_one_scenario_drives_gemini_too(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"turns": [
        {"text": "Scripted hello"},
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]},
        {"fault": {"kind": "server_error"}}]})
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=llmsim.base_url.rsplit("/", 2)[0]))
    assert client.models.generate_content(model=MODEL, contents="Hi").text == "Scripted hello"
    weather = types.Tool(function_declarations=[types.FunctionDeclaration(
        name="get_weather", parameters=types.Schema(type=types.Type.OBJECT, properties={
            "city": types.Schema(type=types.Type.STRING)}))])
    called = client.models.generate_content(model=MODEL, contents="Weather?", config=types.GenerateContentConfig(
        tools=[weather], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True)))
    assert called.function_calls[0].name == "get_weather" and called.function_calls[0].args == {"city": "Rome"}
    with pytest.raises(errors.ServerError) as failed:
        client.models.generate_content(model=MODEL, contents="Again")
    assert failed.value.code == 500 and failed.value.status == "INTERNAL"
    assert [entry["step"] for entry in llmsim.transcript] == ["turns[0]", "turns[1]", "turns[2]"]
    assert llmsim.requests[0]["contents"][0]["parts"][0]["text"] == "Hi"  # the Gemini body, as sent


def test_stream_faults_end_the_stream_as_google_does(server: ServerProcess) -> None:
    def streamed(fault: str) -> tuple[int, BaseException | None]:
        faulty = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=server.url,
                                                                           headers={"X-LLMSim-Fault": fault}))
        chunks = 0
        try:
            for _ in faulty.models.generate_content_stream(model="gemini-2.0-flash", contents="Tell me a long story"):
                chunks += 1
        except Exception as error:  # noqa: BLE001 - what the SDK raises is the point
            return chunks, error
        return chunks, None

    chunks, error = streamed("stream_error")
    assert chunks > 0 and isinstance(error, errors.ServerError) and error.status == "INTERNAL"
    chunks, error = streamed("stream_drop")
    assert chunks > 0 and error is not None and not isinstance(error, errors.APIError)
    whole = httpx.post(f"{server.url}/v1beta/models/gemini-2.0-flash:generateContent", json=QUESTION,
                       headers={"X-LLMSim-Fault": "stream_error"})
    assert whole.status_code == 500 and whole.json()["error"]["status"] == "INTERNAL"


def test_candidates_and_stop_sequences(server: ServerProcess) -> None:
    url = f"{server.url}/v1beta/models/gemini-2.0-flash:generateContent"
    body = {**QUESTION, "generationConfig": {"candidateCount": 2, "seed": 3}}
    made = httpx.post(url, json=body).json()
    candidates = made["candidates"]
    assert [c["index"] for c in candidates] == [0, 1]
    texts = [c["content"]["parts"][0]["text"] for c in candidates]
    assert texts[0] != texts[1] and httpx.post(url, json=body).json()["candidates"][1]["content"] == \
        candidates[1]["content"]  # each candidate its own seed, the same again
    words = texts[0].split()
    stop = " ".join(words[3:5])
    cut = httpx.post(url, json={**QUESTION, "generationConfig": {"seed": 3, "stopSequences": [stop]}}).json()
    said = cut["candidates"][0]["content"]["parts"][0]["text"]
    assert stop not in said and texts[0].startswith(said) and cut["candidates"][0]["finishReason"] == "STOP"


def test_every_part_tool_and_setting_is_accepted(server: ServerProcess) -> None:
    history = [
        {"role": "user", "parts": [{"text": "Look at this"},
                                   {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                                   {"fileData": {"mimeType": "application/pdf", "fileUri": "https://x.test/a.pdf"}}]},
        {"role": "model", "parts": [{"text": "Thinking it over", "thought": True},
                                    {"functionCall": {"name": "lookup", "args": {"q": "a"}},
                                     "thoughtSignature": "c2ln"},
                                    {"functionCall": {"name": "lookup", "args": {"q": "b"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "lookup", "response": {"result": "A"}}},
                                   {"functionResponse": {"name": "lookup", "response": {"result": "B"}}}]},
    ]
    tools = [{"functionDeclarations": [{"name": "lookup", "parametersJsonSchema": {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]},
        {"googleSearch": {}}, {"codeExecution": {}}, {"urlContext": {}}]
    body = {"contents": history, "tools": tools, "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
            "cachedContent": "cachedContents/abc", "generationConfig": {
                "topK": 40, "topP": 0.9, "temperature": 0.2, "maxOutputTokens": 200,
                "thinkingConfig": {"thinkingLevel": "LOW", "includeThoughts": True}}}
    for mode in ("AUTO", "NONE", "VALIDATED"):
        made = httpx.post(f"{server.url}/v1beta/models/gemini-3-pro-preview:generateContent",
                          json={**body, "toolConfig": {"functionCallingConfig": {"mode": mode}}})
        assert made.status_code == 200, made.text
        parts = made.json()["candidates"][0]["content"]["parts"]
        if mode == "NONE":
            assert not any("functionCall" in part for part in parts)
    counted = httpx.post(f"{server.url}/v1beta/models/gemini-3-pro-preview:countTokens",
                         json={"generateContentRequest": {"model": "models/gemini-3-pro-preview", **body}}).json()
    assert counted["totalTokens"] > 20


def test_metrics_and_the_request_log_name_the_gemini_surface(server: ServerProcess) -> None:
    for prefix in ("/v1beta", "/gemini/v1"):
        made = httpx.post(f"{server.url}{prefix}/models/gemini-2.0-flash-lite:generateContent", json=QUESTION)
        assert made.status_code == 200
    scraped = httpx.get(f"{server.url}/metrics").text
    line = next(line for line in scraped.splitlines() if line.startswith("llmsim_requests_total{")
                and 'endpoint="/models/<model>:generateContent"' in line and '"200"' in line)
    assert float(line.rsplit(" ", 1)[1]) >= 2
    assert any(line.startswith("vllm:generation_tokens_total{") and 'model_name="gemini-2.0-flash-lite"' in line
               for line in scraped.splitlines())
    log = httpx.get(f"{server.url}/llmsim/admin/requests").json()["data"]
    assert any(entry["endpoint"] == "gemini" and entry["model"] == "gemini-2.0-flash-lite" for entry in log)


def test_google_search_grounds_the_answer(client: genai.Client) -> None:
    search = types.Tool(google_search=types.GoogleSearch())
    answer = client.models.generate_content(model=MODEL, contents="Search the web for the latest news about Paris",
                                            config=types.GenerateContentConfig(tools=[search]))
    grounding = answer.candidates[0].grounding_metadata
    assert grounding.web_search_queries and grounding.grounding_chunks
    uris = [chunk.web.uri for chunk in grounding.grounding_chunks]
    assert all(uri.startswith("https://") for uri in uris)
    for support in grounding.grounding_supports:
        assert support.segment.text == answer.text[support.segment.start_index:support.segment.end_index]
        assert uris[support.grounding_chunk_indices[0]] in support.segment.text
    plain = client.models.generate_content(model=MODEL, contents="Hi", config=types.GenerateContentConfig(
        tools=[search]))
    assert plain.candidates[0].grounding_metadata is None  # nothing asked for a search
