// The Vercel AI SDK's anthropic provider (`@ai-sdk/anthropic`) against LLMSim's Messages API: text, streaming, a
// tool loop, structured outputs (generateObject and streamObject: output_config.format). `baseURL` is
// check.mjs's OpenAI one; the provider takes the root's /v1.
import assert from "node:assert/strict";
import { createAnthropic } from "@ai-sdk/anthropic";
import { generateObject, generateText, stepCountIs, streamObject, streamText, tool } from "ai";
import { z } from "zod";
import { API_KEY, WEATHER_ANSWER, WEATHER_QUESTION, weather } from "./shared.mjs";

const model = (baseURL) =>
  createAnthropic({ baseURL: baseURL.replace(/\/openai\/v1$/, "/v1"), apiKey: API_KEY })("claude-sonnet-4-6");
const getWeather = tool({
  description: "Get the current weather in a city.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => weather(city),
});

export async function text(baseURL) {
  const result = await generateText({ model: model(baseURL), prompt: "What is the capital of France?" });
  assert.ok(result.text.trim());
  assert.equal(result.finishReason, "stop");
  assert.ok(result.usage.outputTokens > 0);
}

export async function streaming(baseURL) {
  const result = streamText({ model: model(baseURL), prompt: "Tell me a story." });
  const deltas = [];
  for await (const delta of result.textStream) deltas.push(delta);
  assert.ok(deltas.length > 1);
  assert.equal(deltas.join(""), await result.text);
  assert.equal(await result.finishReason, "stop");
}

export async function tool_loop(baseURL) {
  const result = await generateText({ model: model(baseURL), prompt: WEATHER_QUESTION, tools: { getWeather },
                                      toolChoice: "required", stopWhen: stepCountIs(1) });
  assert.equal(result.toolCalls[0].toolName, "getWeather");
  const loop = await generateText({ model: model(baseURL), prompt: WEATHER_QUESTION, tools: { getWeather },
                                    stopWhen: stepCountIs(3),
                                    prepareStep: ({ stepNumber }) => (stepNumber === 0 ? { toolChoice: "required" } : {}) });
  assert.ok(loop.steps.length >= 2);
  assert.ok(loop.text.includes(WEATHER_ANSWER.split(" ")[0]) || loop.text.trim());
  return { text: loop.text };
}

export async function structured(baseURL) {
  const schema = z.object({ city: z.string(), population: z.number().int(), landmarks: z.array(z.string()) });
  const result = await generateObject({ model: model(baseURL), schema, prompt: "Describe Paris." });
  schema.parse(result.object);
  assert.equal(result.finishReason, "stop");
  const streamed = streamObject({ model: model(baseURL), schema, prompt: "Describe Rome." });
  let partials = 0;
  for await (const _ of streamed.partialObjectStream) partials++;  // the object settles once the stream is read
  assert.ok(partials > 1);
  schema.parse(await streamed.object);
}
