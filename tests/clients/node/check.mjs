// `node check.mjs CLIENT`: runs every check CLIENT.mjs exports against LLMSIM_URL (the server's root), one
// after another, each on a clean server (no scenario, no faults, empty logs; LLMSIM_FAULTS_FOR_<check> sets
// faults first). Prints one JSON object: per check, whether it passed (its assertion error if not), what it
// returned, and what the server received (request bodies) and did (the fault log), for pytest to verify.
const [client] = process.argv.slice(2);
const root = process.env.LLMSIM_URL;
const baseURL = `${root}/openai/v1`;
const checks = await import(`./${client}.mjs`);

async function admin(method, path, body) {
  const response = await fetch(`${root}/llmsim/admin${path}`, {
    method, headers: { "Content-Type": "application/json" }, body: body && JSON.stringify(body) });
  if (!response.ok) throw new Error(`admin ${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

const report = {};
for (const [name, check] of Object.entries(checks)) {
  await admin("DELETE", "/scenarios");
  await admin("PUT", "/faults", JSON.parse(process.env[`LLMSIM_FAULTS_FOR_${name}`] ?? "{}"));
  await admin("POST", "/faults/reset");
  const entry = (report[name] = { passed: false });
  const started = performance.now();
  try {
    entry.result = (await check(baseURL)) ?? {};
    entry.passed = true;
  } catch (error) {
    entry.error = String(error?.stack ?? error).slice(0, 4000);
  }
  entry.seconds = (performance.now() - started) / 1000;
  entry.requests = (await admin("GET", "/scenarios/transcript")).data.map((step) => step.request);
  entry.fault_log = (await admin("GET", "/requests")).data;
}
await admin("PUT", "/faults", {});
console.log(JSON.stringify(report));
