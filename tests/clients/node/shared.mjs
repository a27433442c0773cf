// What the Node checks share: the prompts, the weather tool's answer, and the City shape.
import { z } from "zod";

export const API_KEY = "sk-test";
export const NAME_TURN = "My name is Ada. Remember it.";
export const ASK_NAME = "What is my name?";
export const WEATHER_QUESTION = "What's the weather in Paris?";
export const weather = (city) => `It is sunny and 22 C in ${city}.`;
export const WEATHER_ANSWER = "sunny and 22 C";
export const City = z.object({ name: z.string(), country: z.string(), population: z.number().int() });
export const CITY_JSON_PROMPT =
  'Describe Paris. Answer in JSON with the keys "name" (string), "country" (string) and "population" (integer).';
