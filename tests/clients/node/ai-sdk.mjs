// The Vercel AI SDK (`ai` + `@ai-sdk/openai`, the Responses API by default), with its defaults (two retries).
import assert from "node:assert/strict";
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject, generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";
import { API_KEY, ASK_NAME, City, NAME_TURN, WEATHER_ANSWER, WEATHER_QUESTION, weather } from "./shared.mjs";

const provider = (baseURL) => createOpenAI({ baseURL, apiKey: API_KEY });
const getWeather = tool({
  description: "Get the current weather in a city.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => weather(city),
});

export async function text(baseURL) {
  const result = await generateText({ model: provider(baseURL)("gpt-4o"), prompt: "What is the capital of France?" });
  assert.ok(result.text.trim());
  assert.equal(result.finishReason, "stop");
  assert.ok(result.usage.outputTokens > 0);
}

export async function streaming(baseURL) {
  const result = streamText({ model: provider(baseURL)("gpt-4o"), prompt: "Tell me a story." });
  const deltas = [];
  for await (const delta of result.textStream) deltas.push(delta);
  assert.ok(deltas.length > 1);
  assert.equal(deltas.join(""), await result.text);
  assert.equal(await result.finishReason, "stop");
}

export async function server_state(baseURL) {
  const model = provider(baseURL)("gpt-4o");
  const first = await generateText({ model, prompt: NAME_TURN });
  const firstId = first.providerMetadata.openai.responseId;
  const second = await generateText({ model, prompt: ASK_NAME,
                                      providerOptions: { openai: { previousResponseId: firstId } } });
  assert.ok(second.text.trim());
  return { first_id: firstId };
}

export async function client_history(baseURL) {
  // The AI SDK's chat idiom: append response.messages and send the whole history again.
  const model = provider(baseURL)("gpt-4o");
  const messages = [{ role: "user", content: NAME_TURN }];
  const first = await generateText({ model, messages });
  messages.push(...first.response.messages, { role: "user", content: ASK_NAME });
  const second = await generateText({ model, messages });
  assert.ok(second.text.trim());
  return { first_text: first.text, first_id: first.providerMetadata.openai.responseId };
}

export async function tools(baseURL) {
  const result = await generateText({ model: provider(baseURL)("gpt-4o"), prompt: WEATHER_QUESTION,
                                      tools: { get_weather: getWeather }, stopWhen: stepCountIs(5) });
  assert.ok(result.steps.length >= 2);
  assert.equal(result.steps[0].toolCalls[0].toolName, "get_weather");
  assert.ok(result.text.includes(WEATHER_ANSWER), result.text);
}

export async function tools__streaming(baseURL) {
  const result = streamText({ model: provider(baseURL)("gpt-4o"), prompt: WEATHER_QUESTION,
                              tools: { get_weather: getWeather }, stopWhen: stepCountIs(5) });
  const text = await result.text;
  assert.ok(text.includes(WEATHER_ANSWER), text);
}

export async function structured(baseURL) {
  const { object } = await generateObject({ model: provider(baseURL)("gpt-4o"), schema: City,
                                            prompt: "Describe Paris." });
  assert.ok(object.name && object.country);
}

export async function reasoning(baseURL) {
  const result = await generateText({
    model: provider(baseURL)("gpt-5"), prompt: "What is 17 * 23?",
    providerOptions: { openai: { reasoningEffort: "low", reasoningSummary: "auto" } } });
  assert.ok(result.reasoningText && result.reasoningText.trim());
  assert.ok(result.usage.outputTokenDetails?.reasoningTokens > 0 || result.usage.reasoningTokens > 0);
  assert.ok(result.text.trim());
}

export async function reasoning__tool_loop(baseURL) {
  const result = await generateText({
    model: provider(baseURL)("gpt-5"), prompt: WEATHER_QUESTION, tools: { get_weather: getWeather },
    stopWhen: stepCountIs(5), providerOptions: { openai: { reasoningEffort: "low", reasoningSummary: "auto" } } });
  assert.ok(result.text.includes(WEATHER_ANSWER), result.text);
}

export async function retry(baseURL) {
  const result = await generateText({ model: provider(baseURL)("gpt-4o"), prompt: "hi" });
  assert.ok(result.text.trim());
}
