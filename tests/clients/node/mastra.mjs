// Mastra (`@mastra/core`): an Agent on Mastra's own model router, given LLMSim's URL (an OpenAI-compatible
// config, `{ id: "openai/…", url, apiKey }`), with no Mastra server, storage or memory.
import assert from "node:assert/strict";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { z } from "zod";
import { API_KEY, ASK_NAME, City, NAME_TURN, WEATHER_ANSWER, WEATHER_QUESTION, weather } from "./shared.mjs";

const model = (baseURL, name = "gpt-4o", api = "chat") => ({ id: `openai/${name}`, url: baseURL, apiKey: API_KEY, api });
const agent = (baseURL, options = {}) => new Agent({
  id: "assistant", name: "Assistant", instructions: "Be brief.", model: model(baseURL), ...options });
const getWeather = createTool({
  id: "get_weather", description: "Get the current weather in a city.",
  inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => weather(city) });

export async function text(baseURL) {
  const result = await agent(baseURL).generate("What is the capital of France?");
  assert.ok(result.text.trim());
}

export async function streaming(baseURL) {
  const stream = await agent(baseURL).stream("Tell me a story.");
  const deltas = [];
  for await (const delta of stream.textStream) deltas.push(delta);
  assert.ok(deltas.length > 1);
  assert.equal(deltas.join(""), await stream.text);
}

export async function server_state(baseURL) {
  // the AI SDK's OpenAI provider option under Mastra's router, on the Responses API
  const responses = agent(baseURL, { model: model(baseURL, "gpt-4o", "responses") });
  const first = await responses.generate(NAME_TURN);
  const second = await responses.generate(ASK_NAME, {
    providerOptions: { openai: { previousResponseId: first.response.id } } });
  assert.ok(second.text.trim());
  return { first_id: first.response.id };
}

export async function client_history(baseURL) {
  const messages = [{ role: "user", content: NAME_TURN }];
  const first = await agent(baseURL).generate(messages);
  messages.push({ role: "assistant", content: first.text }, { role: "user", content: ASK_NAME });
  const second = await agent(baseURL).generate(messages);
  assert.ok(second.text.trim());
  return { first_text: first.text };
}

export async function tools(baseURL) {
  const result = await agent(baseURL, { tools: { get_weather: getWeather } }).generate(WEATHER_QUESTION,
                                                                                       { maxSteps: 3 });
  assert.deepEqual(result.toolCalls.map((call) => call.payload?.toolName ?? call.toolName), ["get_weather"]);
  assert.ok(result.text.includes(WEATHER_ANSWER), result.text);
}

export async function structured(baseURL) {
  const result = await agent(baseURL).generate("Describe Paris.", { structuredOutput: { schema: City } });
  City.parse(result.object);
  assert.ok(result.object.name);
}

export async function reasoning(baseURL) {
  const result = await agent(baseURL, { model: model(baseURL, "gpt-5", "responses") }).generate("What is 17 * 23?", {
    providerOptions: { openai: { reasoningEffort: "low", reasoningSummary: "auto" } } });
  assert.ok(result.reasoningText?.trim(), "no reasoning text");
  assert.ok(result.text.trim());
}

export async function retry(baseURL) {
  const result = await agent(baseURL).generate("hi", { modelSettings: { maxRetries: 2 } });
  assert.ok(result.text.trim());
}
