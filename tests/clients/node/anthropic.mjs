// The anthropic TypeScript SDK (`@anthropic-ai/sdk`) against LLMSim's Messages API: the same core as the Python
// SDK's tests (tests/clients/test_anthropic.py). `baseURL` is check.mjs's OpenAI one: the SDK takes the root.
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { API_KEY, WEATHER_QUESTION, weather } from "./shared.mjs";

const MODEL = "claude-sonnet-4-6";
const client = (baseURL, options = {}) =>
  new Anthropic({ baseURL: baseURL.replace(/\/openai\/v1$/, ""), apiKey: API_KEY, maxRetries: 0, ...options });
const WEATHER = {
  name: "get_weather", description: "Get the current weather in a city.",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const ask = (text) => [{ role: "user", content: text }];

export async function text(baseURL) {
  const message = await client(baseURL).messages.create({ model: MODEL, max_tokens: 200, messages: ask("Hi!") });
  assert.equal(message.type, "message");
  assert.equal(message.stop_reason, "end_turn");
  assert.ok(message.content[0].text.trim());
  assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0);
}

export async function streaming(baseURL) {
  const stream = client(baseURL).messages.stream({ model: MODEL, max_tokens: 300, messages: ask("Tell me a story.") });
  const deltas = [];
  stream.on("text", (delta) => deltas.push(delta));
  const final = await stream.finalMessage();
  assert.ok(deltas.length > 1);
  assert.equal(deltas.join(""), final.content[0].text);
}

export async function tools(baseURL) {
  const sdk = client(baseURL);
  const messages = ask(WEATHER_QUESTION);
  const first = await sdk.messages.create({ model: MODEL, max_tokens: 300, tools: [WEATHER],
                                           tool_choice: { type: "any" }, messages });
  const call = first.content.find((block) => block.type === "tool_use");
  assert.equal(first.stop_reason, "tool_use");
  assert.equal(call.name, "get_weather");
  const second = await sdk.messages.create({ model: MODEL, max_tokens: 300, tools: [WEATHER], messages: [
    ...messages, { role: "assistant", content: first.content },
    { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: weather(call.input.city) }] }] });
  assert.equal(second.stop_reason, "end_turn");
  return { text: second.content[0].text };
}

export async function reasoning(baseURL) {
  const message = await client(baseURL).messages.create({
    model: MODEL, max_tokens: 4000, thinking: { type: "enabled", budget_tokens: 2000 }, messages: ask("2 + 2?") });
  assert.equal(message.content[0].type, "thinking");
  assert.ok(message.content[0].signature.length > 40);
  const adaptive = await client(baseURL).messages.create({
    model: MODEL, max_tokens: 4000, thinking: { type: "adaptive" }, messages: ask("2 + 2?") });
  assert.equal(adaptive.content[0].type, "thinking");
}

export async function count_tokens(baseURL) {
  const sdk = client(baseURL);
  const counted = await sdk.messages.countTokens({ model: MODEL, messages: ask("Hello there") });
  const made = await sdk.messages.create({ model: MODEL, max_tokens: 50, messages: ask("Hello there") });
  assert.equal(counted.input_tokens, made.usage.input_tokens);
}

export async function error_envelope(baseURL) {
  await assert.rejects(client(baseURL).messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: "x", content: "y" }] }),
    (error) => error instanceof Anthropic.BadRequestError && error.error.error.type === "invalid_request_error"
      && error.requestID?.startsWith("req_"));
}

export async function retry(baseURL) {
  // LLMSIM_FAULTS_FOR_retry: the first request gets a 429; the SDK's own retries get through.
  const message = await client(baseURL, { maxRetries: 2 }).messages.create({
    model: MODEL, max_tokens: 50, messages: ask("Hi") });
  assert.ok(message.content.length > 0);
}
