// OpenAI's Agents SDK for JavaScript (`@openai/agents`): a Runner whose OpenAIProvider points at LLMSim, on the
// Responses API (its default), tracing off (nothing leaves the machine).
import assert from "node:assert/strict";
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";
import { API_KEY, ASK_NAME, City, NAME_TURN, WEATHER_ANSWER, WEATHER_QUESTION, weather } from "./shared.mjs";

setTracingDisabled(true);
const runner = (baseURL) => new Runner({ modelProvider: new OpenAIProvider({ baseURL, apiKey: API_KEY }) });
const agent = (options = {}) => new Agent({ name: "Assistant", instructions: "Be brief.", model: "gpt-4o", ...options });
const getWeather = tool({
  name: "get_weather", description: "Get the current weather in a city.",
  parameters: z.object({ city: z.string() }), execute: async ({ city }) => weather(city) });

export async function text(baseURL) {
  const result = await runner(baseURL).run(agent(), "What is the capital of France?");
  assert.ok(String(result.finalOutput).trim());
}

export async function streaming(baseURL) {
  const result = await runner(baseURL).run(agent(), "Tell me a story.", { stream: true });
  const deltas = [];
  for await (const delta of result.toTextStream()) deltas.push(delta);
  await result.completed;
  assert.ok(deltas.length > 1);
  assert.equal(deltas.join(""), result.finalOutput);
}

export async function server_state(baseURL) {
  const first = await runner(baseURL).run(agent(), NAME_TURN);
  const second = await runner(baseURL).run(agent(), ASK_NAME, { previousResponseId: first.lastResponseId });
  assert.ok(String(second.finalOutput).trim());
  return { first_id: first.lastResponseId };
}

export async function client_history(baseURL) {
  const first = await runner(baseURL).run(agent(), NAME_TURN);
  const second = await runner(baseURL).run(agent(), [...first.history, { role: "user", content: ASK_NAME }]);
  assert.ok(String(second.finalOutput).trim());
  return { first_text: first.finalOutput };
}

export async function tools(baseURL) {
  const result = await runner(baseURL).run(agent({ tools: [getWeather] }), WEATHER_QUESTION);
  const calls = result.newItems.filter((item) => item.type === "tool_call_item");
  assert.deepEqual(calls.map((item) => item.rawItem.name), ["get_weather"]);
  assert.ok(result.finalOutput.includes(WEATHER_ANSWER), result.finalOutput);
}

export async function structured(baseURL) {
  const result = await runner(baseURL).run(agent({ outputType: City }), "Describe Paris.");
  City.parse(result.finalOutput);
  assert.ok(result.finalOutput.name);
}

export async function reasoning(baseURL) {
  const result = await runner(baseURL).run(
    agent({ model: "gpt-5", modelSettings: { reasoning: { effort: "low", summary: "auto" } } }), "What is 17 * 23?");
  assert.equal(result.newItems.filter((item) => item.type === "reasoning_item").length, 1);
  assert.ok(String(result.finalOutput).trim());
}

export async function retry(baseURL) {
  const result = await runner(baseURL).run(agent(), "hi");
  assert.ok(String(result.finalOutput).trim());
}
