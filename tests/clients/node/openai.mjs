// The official `openai` package, with its defaults (two retries).
import assert from "node:assert/strict";
import OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { API_KEY, ASK_NAME, City, NAME_TURN, WEATHER_ANSWER, WEATHER_QUESTION, weather } from "./shared.mjs";

const client = (baseURL) => new OpenAI({ baseURL, apiKey: API_KEY });
const weatherTool = {
  type: "function", name: "get_weather", description: "Get the current weather in a city.", strict: true,
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"],
                additionalProperties: false },
};

export async function text(baseURL) {
  const response = await client(baseURL).responses.create({ model: "gpt-4o", input: "What is the capital of France?" });
  assert.equal(response.status, "completed");
  assert.ok(response.output_text.trim());
  const chat = await client(baseURL).chat.completions.create({
    model: "gpt-4o", messages: [{ role: "user", content: "What is the capital of France?" }] });
  assert.ok(chat.choices[0].message.content.trim());
}

export async function streaming(baseURL) {
  const stream = client(baseURL).responses.stream({ model: "gpt-4o", input: "Tell me a story." });
  const deltas = [];
  for await (const event of stream) if (event.type === "response.output_text.delta") deltas.push(event.delta);
  const final = await stream.finalResponse();
  assert.ok(deltas.length > 1);
  assert.equal(deltas.join(""), final.output_text);
}

export async function server_state(baseURL) {
  const first = await client(baseURL).responses.create({ model: "gpt-4o", input: NAME_TURN });
  const second = await client(baseURL).responses.create({ model: "gpt-4o", input: ASK_NAME,
                                                          previous_response_id: first.id });
  assert.equal(second.previous_response_id, first.id);
  return { first_id: first.id };
}

export async function client_history(baseURL) {
  const input = [{ role: "user", content: NAME_TURN }];
  const first = await client(baseURL).responses.create({ model: "gpt-4o", input, store: false });
  input.push(...first.output, { role: "user", content: ASK_NAME });
  const second = await client(baseURL).responses.create({ model: "gpt-4o", input, store: false });
  assert.ok(second.output_text.trim());
  return { first_text: first.output_text };
}

export async function tools(baseURL) {
  const input = [{ role: "user", content: WEATHER_QUESTION }];
  const first = await client(baseURL).responses.create({ model: "gpt-4o", input, tools: [weatherTool] });
  const calls = first.output.filter((item) => item.type === "function_call");
  assert.deepEqual(calls.map((call) => call.name), ["get_weather"]);
  input.push(...first.output, ...calls.map((call) => ({
    type: "function_call_output", call_id: call.call_id, output: weather(JSON.parse(call.arguments).city) })));
  const final = await client(baseURL).responses.create({ model: "gpt-4o", input, tools: [weatherTool] });
  assert.ok(final.output_text.includes(WEATHER_ANSWER), final.output_text);
}

export async function structured(baseURL) {
  const response = await client(baseURL).responses.parse({
    model: "gpt-4o", input: "Describe Paris.", text: { format: zodTextFormat(City, "city") } });
  assert.ok(response.output_parsed.name);
  City.parse(response.output_parsed);
}

export async function reasoning(baseURL) {
  const response = await client(baseURL).responses.create({
    model: "gpt-5", input: "What is 17 * 23?", reasoning: { effort: "low", summary: "auto" } });
  const items = response.output.filter((item) => item.type === "reasoning");
  assert.ok(items.length === 1 && items[0].summary.length > 0);
  assert.ok(response.usage.output_tokens_details.reasoning_tokens > 0 && response.output_text.trim());
}

export async function retry(baseURL) {
  const response = await client(baseURL).responses.create({ model: "gpt-4o", input: "hi" });
  assert.equal(response.status, "completed");
}

export async function tools__chat(baseURL) {
  // Chat Completions' loop as OpenAI's docs write it: the assistant message, then a `tool` message per call.
  const tools = [{ type: "function", function: { name: weatherTool.name, description: weatherTool.description,
                                                 parameters: weatherTool.parameters } }];
  const messages = [{ role: "user", content: WEATHER_QUESTION }];
  const first = await client(baseURL).chat.completions.create({ model: "gpt-4o", messages, tools });
  const message = first.choices[0].message;
  assert.equal(message.tool_calls[0].function.name, "get_weather");
  messages.push(message, ...message.tool_calls.map((call) => ({
    role: "tool", tool_call_id: call.id, content: weather(JSON.parse(call.function.arguments).city) })));
  const final = await client(baseURL).chat.completions.create({ model: "gpt-4o", messages, tools });
  assert.ok(final.choices[0].message.content.includes(WEATHER_ANSWER));
}
