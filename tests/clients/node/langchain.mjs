// LangChain JS: ChatOpenAI from `@langchain/openai` (Chat Completions by default) and `createAgent` from
// `langchain`, with their defaults.
import assert from "node:assert/strict";
import { ChatOpenAI } from "@langchain/openai";
import { AIMessage, HumanMessage, createAgent, tool } from "langchain";
import { z } from "zod";
import { API_KEY, ASK_NAME, CITY_JSON_PROMPT, City, NAME_TURN, WEATHER_ANSWER, WEATHER_QUESTION, weather }
  from "./shared.mjs";

const chat = (baseURL, fields = {}) =>
  new ChatOpenAI({ model: "gpt-4o", apiKey: API_KEY, configuration: { baseURL }, ...fields });
const getWeather = tool(async ({ city }) => weather(city), {
  name: "get_weather", description: "Get the current weather in a city.", schema: z.object({ city: z.string() }),
});

export async function text(baseURL) {
  for (const useResponsesApi of [false, true]) {
    const reply = await chat(baseURL, { useResponsesApi }).invoke("What is the capital of France?");
    assert.ok(AIMessage.isInstance(reply) && reply.text.trim());
    assert.ok(reply.usage_metadata.output_tokens > 0);
  }
}

export async function streaming(baseURL) {
  const chunks = [];
  for await (const chunk of await chat(baseURL).stream("Tell me a story.")) chunks.push(chunk.text);
  assert.ok(chunks.filter(Boolean).length > 1 && chunks.join("").trim());
}

export async function server_state(baseURL) {
  const model = chat(baseURL, { useResponsesApi: true });
  const first = await model.invoke([new HumanMessage(NAME_TURN)]);
  const firstId = first.response_metadata.id;
  const second = await model.invoke([new HumanMessage(ASK_NAME)], { previous_response_id: firstId });
  assert.ok(second.text.trim());
  return { first_id: firstId };
}

export async function client_history(baseURL) {
  const model = chat(baseURL);
  const messages = [new HumanMessage(NAME_TURN)];
  const first = await model.invoke(messages);
  messages.push(first, new HumanMessage(ASK_NAME));
  assert.ok((await model.invoke(messages)).text.trim());
  return { first_text: first.text };
}

export async function tools(baseURL) {
  // createAgent's loop sends each ToolMessage back with its `name`.
  const agent = createAgent({ model: chat(baseURL), tools: [getWeather] });
  const result = await agent.invoke({ messages: [{ role: "user", content: WEATHER_QUESTION }] });
  const answer = result.messages.at(-1);
  assert.ok(result.messages.some((m) => m.type === "tool"));
  assert.ok(answer.text.includes(WEATHER_ANSWER), answer.text);
}

export async function tools__responses(baseURL) {
  const agent = createAgent({ model: chat(baseURL, { useResponsesApi: true }), tools: [getWeather] });
  const result = await agent.invoke({ messages: [{ role: "user", content: WEATHER_QUESTION }] });
  assert.ok(result.messages.at(-1).text.includes(WEATHER_ANSWER));
}

async function structuredWith(baseURL, method, useResponsesApi) {
  const model = chat(baseURL, { useResponsesApi }).withStructuredOutput(City, { method });
  const city = await model.invoke(method === "jsonMode" ? CITY_JSON_PROMPT : "Describe Paris.");
  assert.ok(City.parse(city).name, JSON.stringify(city));
}

// withStructuredOutput in each of its methods, on Chat Completions (the default) and on the Responses API.
export const structured__json_schema = (baseURL) => structuredWith(baseURL, "jsonSchema", false);
export const structured__function_calling = (baseURL) => structuredWith(baseURL, "functionCalling", false);
export const structured__json_mode = (baseURL) => structuredWith(baseURL, "jsonMode", false);
export const structured__json_schema_responses = (baseURL) => structuredWith(baseURL, "jsonSchema", true);
export const structured__function_calling_responses = (baseURL) => structuredWith(baseURL, "functionCalling", true);
export const structured__json_mode_responses = (baseURL) => structuredWith(baseURL, "jsonMode", true);

export async function structured__agent(baseURL) {
  const agent = createAgent({ model: chat(baseURL), tools: [], responseFormat: City });
  const result = await agent.invoke({ messages: [{ role: "user", content: "Describe Paris." }] });
  assert.ok(City.parse(result.structuredResponse).name);
}

export async function reasoning(baseURL) {
  const model = chat(baseURL, { model: "gpt-5", reasoning: { effort: "low", summary: "auto" } });
  const reply = await model.invoke("What is 17 * 23?");
  const kinds = reply.contentBlocks.map((block) => block.type);
  assert.ok(kinds.includes("reasoning") && kinds.includes("text"), JSON.stringify(reply.contentBlocks));
}

export async function retry(baseURL) {
  assert.ok((await chat(baseURL).invoke("hi")).text.trim());
}
