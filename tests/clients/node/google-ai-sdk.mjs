// The Vercel AI SDK's Google provider (`@ai-sdk/google`) against LLMSim's Gemini API: text, streaming, a tool
// loop, structured output, thinking, embeddings. `baseURL` is check.mjs's OpenAI one; the provider takes the
// root's /v1beta.
import assert from "node:assert/strict";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { embedMany, generateObject, generateText, stepCountIs, streamText, tool, cosineSimilarity, embed } from "ai";
import { z } from "zod";
import { City, WEATHER_ANSWER, WEATHER_QUESTION, weather } from "./shared.mjs";

const google = (baseURL) =>
  createGoogleGenerativeAI({ baseURL: baseURL.replace(/\/openai\/v1$/, "/v1beta"), apiKey: "goog-test" });
const model = (baseURL, name = "gemini-2.5-flash") => google(baseURL)(name);
const getWeather = tool({
  description: "Get the current weather in a city.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => weather(city),
});

export async function text(baseURL) {
  const result = await generateText({ model: model(baseURL), prompt: "What is the capital of France?" });
  assert.ok(result.text.trim());
  assert.equal(result.finishReason, "stop");
  assert.ok(result.usage.outputTokens > 0 && result.usage.inputTokens > 0);
}

export async function streaming(baseURL) {
  const result = streamText({ model: model(baseURL, "gemini-2.0-flash"), prompt: "Tell me a story." });
  const deltas = [];
  for await (const delta of result.textStream) deltas.push(delta);
  assert.ok(deltas.length > 1);
  assert.equal(deltas.join(""), await result.text);
  assert.equal(await result.finishReason, "stop");
}

export async function tool_loop(baseURL) {
  const loop = await generateText({ model: model(baseURL), prompt: WEATHER_QUESTION, tools: { getWeather },
                                    stopWhen: stepCountIs(3),
                                    prepareStep: ({ stepNumber }) => (stepNumber === 0 ? { toolChoice: "required" } : {}) });
  assert.equal(loop.steps[0].toolCalls[0].toolName, "getWeather");
  assert.ok(loop.steps.length >= 2);
  assert.ok(loop.text.trim());
  return { answer: WEATHER_ANSWER };
}

export async function structured(baseURL) {
  const { object } = await generateObject({ model: model(baseURL), schema: City, prompt: "Describe Paris." });
  assert.equal(typeof object.name, "string");
  assert.ok(Number.isInteger(object.population));
}

export async function reasoning(baseURL) {
  const result = await generateText({
    model: model(baseURL), prompt: "Why is the sky blue?",
    providerOptions: { google: { thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } } },
  });
  assert.ok(result.reasoningText && result.reasoningText.trim());
  assert.ok(result.text.trim());
  assert.ok(result.usage.reasoningTokens > 0);
}

export async function embeddings(baseURL) {
  const embedder = google(baseURL).textEmbeddingModel("gemini-embedding-001");
  const documents = ["Paris is the capital of France.", "The mitochondria is the powerhouse of the cell.",
                     "Python was created by Guido van Rossum."];
  const { embeddings } = await embedMany({ model: embedder, values: documents });
  assert.equal(embeddings.length, 3);
  assert.equal(embeddings[0].length, 3072);
  const { embedding } = await embed({ model: embedder, value: "Who created Python?" });
  const scores = embeddings.map((vector) => cosineSimilarity(vector, embedding));
  assert.equal(scores.indexOf(Math.max(...scores)), 2);
}
