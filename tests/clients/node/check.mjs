// `node check.mjs CLIENT FEATURE`: runs one check of CLIENT.mjs against LLMSIM_BASE_URL. Assertions fail the
// process; on success the check's result (what pytest verifies on the server side) is the last stdout line.
const [client, feature] = process.argv.slice(2);
const checks = await import(`./${client}.mjs`);
if (typeof checks[feature] !== "function") {
  console.error(`${client}.mjs has no check '${feature}'`);
  process.exit(2);
}
const result = await checks[feature](process.env.LLMSIM_BASE_URL);
console.log(JSON.stringify(result ?? {}));
