// LLMSim live dashboard: polls /llmsim/ui/api/state once a second and draws it. No build step, no network
// beyond this server; uPlot (vendored, MIT) draws the time series, the histograms are plain SVG.
"use strict";

const STATE_URL = "/llmsim/ui/api/state";
const HISTORY_URL = "/llmsim/ui/api/history";  // the server's last 15 minutes of the charts' points
const POLL_MS = 1000;
let WINDOW_S = 900;        // seconds of history in the time-series charts (the server's window, once loaded)
const RATE_S = 5;          // requests per second: averaged over this many seconds
const COLORS = ["#1d4ed8", "#db2777", "#059669", "#d97706", "#7c3aed", "#0891b2", "#65a30d", "#dc2626"];
const FAULT_COLORS = ["#dc2626", "#ea580c", "#a21caf", "#0f766e", "#ca8a04", "#4f46e5", "#be123c", "#0369a1"];
const KEY_STORE = "llmsimAdminKey";
const BASE_STORE = "llmsimBaseline";

const $ = (id) => document.getElementById(id);
let history = [];           // [{t, finished: {model: n}, faults: {kind: n}, limited}]
let baseline = JSON.parse(localStorage.getItem(BASE_STORE) || "null");
let selected = null;        // the model the histograms show; null: the busiest
let charts = {};
let latest = null;
let lastIndex = 0;
const colorOf = {};

function color(model) {
  if (!(model in colorOf)) colorOf[model] = COLORS[Object.keys(colorOf).length % COLORS.length];
  return colorOf[model];
}

// --- talking to the server -------------------------------------------------------------------------------
async function call(url, options = {}) {
  const key = sessionStorage.getItem(KEY_STORE);
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  const res = await fetch(url, { ...options, headers: { ...headers, ...(options.headers || {}) } });
  if (res.status === 401) {
    $("login").hidden = false;
    throw new Error("admin key needed");
  }
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.json();
}

// The charts' points the server kept (llmsim/metrics/history.py), counted from the page's baseline: a reload
// starts with the last 15 minutes instead of an empty chart.
async function loadHistory() {
  try {
    const data = await call(HISTORY_URL);
    WINDOW_S = data.window_s || WINDOW_S;
    history = data.points.filter((p) => !baseline || !baseline.t || p.t >= baseline.t).map(pointFrom);
  } catch (err) {
    if ($("login").hidden) console.error(err);  // else: loaded once the key is given
    return false;
  }
  return true;
}

function pointFrom(p) {
  const finished = {}, faults = {};
  for (const [model, n] of Object.entries(p.finished)) finished[model] = minus(n, baseModel(model) && baseModel(model).finished);
  for (const [kind, n] of Object.entries(p.faults)) faults[kind] = minus(n, baseline && baseline.faults[kind]);
  return { t: p.t, finished, faults, limited: minus(p.limited, baseline && baseline.rate_limited) };
}

let historyLoaded = false;

async function poll() {
  if (!historyLoaded) historyLoaded = await loadHistory();
  try {
    const state = await call(STATE_URL);
    $("live").classList.remove("stale");
    render(state);
  } catch (err) {
    $("live").classList.add("stale");
    if ($("login").hidden) console.error(err);  // else: waiting for the admin key, polls go on
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

// --- numbers ----------------------------------------------------------------------------------------------
const sum = (values) => values.reduce((a, b) => a + b, 0);
function minus(value, base) { return Math.max(0, value - (base || 0)); }
function baseModel(name) { return (baseline && baseline.models[name]) || null; }

function histogramOf(model, key) {
  const now = model[key];
  const base = baseModel(model.name) && baseModel(model.name)[key];
  const before = new Map(base ? base.buckets : []);  // by upper bound: a model may have had none at the reset
  const buckets = now.buckets.map(([le, count]) => [le, minus(count, before.get(le))]);
  return { buckets, count: minus(now.count, base && base.count), sum: minus(now.sum, base && base.sum) };
}

function mergeHistograms(list) {
  list = list.filter((h) => h.buckets.length);  // a model with no streams has no series yet
  if (!list.length) return { buckets: [], count: 0, sum: 0 };
  const buckets = list[0].buckets.map(([le], i) => [le, sum(list.map((h) => h.buckets[i][1]))]);
  return { buckets, count: sum(list.map((h) => h.count)), sum: sum(list.map((h) => h.sum)) };
}

// Prometheus' histogram_quantile: linear within the bucket that holds the q-th observation.
function quantile(hist, q) {
  if (!hist.count) return null;
  const rank = q * hist.count;
  let lower = 0, below = 0;
  for (const [le, cumulative] of hist.buckets) {
    if (cumulative >= rank) {
      const inBucket = cumulative - below;
      return inBucket ? lower + (le - lower) * (rank - below) / inBucket : le;
    }
    lower = le; below = cumulative;
  }
  return lower;
}

function ms(seconds) {
  if (seconds == null) return "–";
  const v = seconds * 1000;
  return v >= 10 ? `${Math.round(v).toLocaleString()} ms` : `${v.toFixed(v >= 1 ? 1 : 2)} ms`;
}
function count(n) {
  n = Math.round(n);
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e4 ? `${(n / 1e3).toFixed(1)}k` : n.toLocaleString();
}
function usd(v) { return v >= 100 ? `$${Math.round(v).toLocaleString()}` : v >= 1 ? `$${v.toFixed(2)}` : `$${v.toFixed(3)}`; }

// --- drawing ----------------------------------------------------------------------------------------------
function render(state) {
  latest = state;
  const models = state.models;
  const finished = {}, faults = {};
  for (const m of models) finished[m.name] = minus(m.finished, baseModel(m.name) && baseModel(m.name).finished);
  for (const [kind, n] of Object.entries(state.faults)) faults[kind] = minus(n, baseline && baseline.faults[kind]);
  const limited = minus(state.rate_limited, baseline && baseline.rate_limited);
  if (!history.length || state.time > history[history.length - 1].t) history.push({ t: state.time, finished, faults, limited });
  history = history.filter((h) => h.t >= state.time - WINDOW_S);

  renderLegend(models);
  renderKpis(state, finished, faults, limited);
  renderRates();
  renderFaults();
  renderHistograms(models);
  renderRequests(state.recent);
  renderChaos(state);
}

function renderLegend(models) {
  const legend = $("legend");
  const names = models.map((m) => `${m.name} ${m.running + m.waiting}`).join("\n");
  if (legend.dataset.names === names && legend.dataset.selected === String(selected)) return;
  legend.dataset.names = names;
  legend.dataset.selected = String(selected);
  legend.replaceChildren(...models.map((m) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = m.name === selected ? "active" : "";
    button.title = "in flight now; click to show this model's latency distributions";
    const swatch = document.createElement("i");
    swatch.style.background = color(m.name);
    const flight = document.createElement("small");
    flight.textContent = `${count(m.running + m.waiting)} in flight`;
    button.append(swatch, m.name, flight);
    button.onclick = () => { selected = selected === m.name ? null : m.name; render(latest); };
    return button;
  }));
}

function rateOver(seconds) {
  const now = history[history.length - 1];
  let past = history[0];
  for (const h of history) if (h.t >= now.t - seconds) { past = h; break; }
  const dt = now.t - past.t;
  const rates = {};
  for (const [model, n] of Object.entries(now.finished)) rates[model] = dt > 0 ? (n - (past.finished[model] || 0)) / dt : 0;
  return rates;
}

function renderKpis(state, finished, faults, limited) {
  const rates = rateOver(RATE_S);
  $("k-rps").textContent = sum(Object.values(rates)).toFixed(1);
  $("k-rps-sub").textContent = `${count(sum(Object.values(finished)))} finished`;
  const running = sum(state.models.map((m) => m.running)), waiting = sum(state.models.map((m) => m.waiting));
  $("k-flight").textContent = count(running + waiting);
  $("k-flight-sub").textContent = waiting ? `${count(waiting)} queued` : "none queued";

  const ttft = mergeHistograms(state.models.map((m) => histogramOf(m, "ttft")));
  const itl = mergeHistograms(state.models.map((m) => histogramOf(m, "itl")));
  $("k-ttft").textContent = ms(quantile(ttft, 0.5));
  $("k-itl").textContent = ms(quantile(itl, 0.5));
  $("k-ttft-sub").textContent = ttft.count ? `p95 ${ms(quantile(ttft, 0.95))}` : "streamed requests";
  $("k-itl-sub").textContent = itl.count ? `p95 ${ms(quantile(itl, 0.95))}` : "streamed requests";

  const kinds = Object.entries(faults).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
  $("k-faults").textContent = count(sum(kinds.map(([, n]) => n)));
  $("k-faults-sub").textContent = kinds.length ? `${kinds.length} kind${kinds.length > 1 ? "s" : ""} · most ${kinds[0][0]}` : "none yet";
  $("k-limited").textContent = count(limited);

  const prompt = sum(state.models.map((m) => minus(m.prompt_tokens, baseModel(m.name) && baseModel(m.name).prompt_tokens)));
  const output = sum(state.models.map((m) => minus(m.generation_tokens, baseModel(m.name) && baseModel(m.name).generation_tokens)));
  const reasoning = sum(state.models.map((m) => minus(m.reasoning_tokens, baseModel(m.name) && baseModel(m.name).reasoning_tokens)));
  $("k-tokens").textContent = count(prompt + output);
  $("k-tokens-sub").textContent = `${count(prompt)} in · ${count(output)} out${reasoning ? ` · ${count(reasoning)} reasoning` : ""}`;
  $("k-cost").textContent = usd(sum(state.models.map((m) => minus(m.cost_usd, baseModel(m.name) && baseModel(m.name).cost_usd))));
}

function focusModel(models) {
  if (!models.length) return null;
  const chosen = models.find((m) => m.name === selected);
  if (chosen) return chosen;
  return models.reduce((best, m) => (histogramOf(m, "ttft").count + m.finished > histogramOf(best, "ttft").count + best.finished ? m : best));
}

function chartSize(el) { return { width: Math.max(200, el.clientWidth), height: Math.max(120, el.clientHeight) }; }

function axes(yLabel) {
  const font = "600 14px system-ui, sans-serif";
  return [
    { stroke: "#4b5563", font, grid: { stroke: "#e5e7eb", width: 1 }, ticks: { stroke: "#d7dde7" },
      space: 110, values: (u, splits) => splits.map((t) => new Date(t * 1000).toLocaleTimeString([], { hour12: false })) },
    { stroke: "#4b5563", font, grid: { stroke: "#e5e7eb", width: 1 }, ticks: { stroke: "#d7dde7" }, label: yLabel,
      labelFont: font, size: 56 },
  ];
}

function timeSeries(id, names, colors, yLabel, stepped) {
  const key = names.join("\n");
  const el = $(id);
  if (charts[id] && charts[id].key === key) return charts[id].plot;
  if (charts[id]) charts[id].plot.destroy();
  const series = [{}].concat(names.map((name, i) => ({
    label: name, stroke: colors[i], width: 3, points: { show: false },
    paths: stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
  })));
  const opts = { ...chartSize(el), series, axes: axes(yLabel), legend: { show: false }, cursor: { drag: { x: false } },
    scales: { y: { range: (u, min, max) => [0, Math.max(1, max * 1.15)] } } };
  el.replaceChildren();
  const plot = new uPlot(opts, [[], ...names.map(() => [])], el);
  charts[id] = { key, plot };
  return plot;
}

function renderRates() {
  const names = Object.keys(history[history.length - 1].finished);
  const plot = timeSeries("chart-rps", names.length ? names : ["(no traffic)"], names.map(color).concat("#9ca3af"), "req/s");
  const xs = [], ys = names.map(() => []);
  for (let i = 1; i < history.length; i++) {
    const now = history[i];
    let j = i;
    while (j > 0 && history[j - 1].t >= now.t - RATE_S) j--;
    const past = history[Math.min(j, i - 1)];
    const dt = now.t - past.t;
    xs.push(now.t);
    names.forEach((name, k) => ys[k].push(dt > 0 ? (now.finished[name] - (past.finished[name] || 0)) / dt : 0));
  }
  plot.setData([xs, ...(names.length ? ys : [xs.map(() => 0)])]);
}

function renderFaults() {
  const last = history[history.length - 1];
  const kinds = Object.keys(last.faults).sort();
  const names = [...kinds, "rate-limited (real limits)"];
  const colors = kinds.map((_, i) => FAULT_COLORS[i % FAULT_COLORS.length]).concat("#111827");
  const plot = timeSeries("chart-faults", names, colors, "count", true);
  const legend = $("faults-legend");
  if (legend.dataset.names !== names.join("\n")) {
    legend.dataset.names = names.join("\n");
    legend.replaceChildren(...names.map((name, i) => {
      const span = document.createElement("span");
      const line = document.createElement("i");
      line.style.background = colors[i];
      span.append(line, name);
      return span;
    }));
  }
  const xs = history.map((h) => h.t);
  plot.setData([xs, ...kinds.map((k) => history.map((h) => h.faults[k] || 0)), history.map((h) => h.limited)]);
}

function renderHistograms(models) {
  const focus = focusModel(models);
  for (const key of ["ttft", "itl"]) {
    $(`${key}-model`).textContent = focus ? focus.name : "";
    const hist = focus ? histogramOf(focus, key) : { buckets: [], count: 0 };
    const profile = focus && focus.profile;
    drawHistogram($(`hist-${key}`), hist, profile && profile[`${key}_p50`], profile && profile[`${key}_p95`]);
    const p50 = quantile(hist, 0.5), p95 = quantile(hist, 0.95);
    const compare = $(`${key}-compare`);
    compare.innerHTML = "";
    const measured = document.createElement("span");
    measured.innerHTML = `measured p50 <b></b> · p95 <b></b> <small>(${count(hist.count)} ${key === "ttft" ? "streams" : "gaps"})</small>`;
    measured.querySelectorAll("b")[0].textContent = ms(p50);
    measured.querySelectorAll("b")[1].textContent = ms(p95);
    compare.append(measured);
    if (profile) {
      const configured = document.createElement("span");
      configured.className = "p";
      configured.textContent = `profile p50 ${ms(profile[`${key}_p50`])} · p95 ${ms(profile[`${key}_p95`])}`;
      compare.append(configured);
    }
  }
}

function svg(tag, attrs, text) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text != null) el.textContent = text;
  return el;
}

// Bars of the measured distribution (per bucket, on the buckets' own scale), with the measured p50 (solid)
// and the profile's configured p50/p95 (dashed) as markers.
function drawHistogram(el, hist, p50, p95) {
  const { width, height } = chartSize(el);
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}` });
  const counts = hist.buckets.map(([le, c], i) => [le, c - (i ? hist.buckets[i - 1][1] : 0)]);
  const bounds = counts.map(([le]) => le);
  let lo = counts.findIndex(([, c]) => c > 0), hi = counts.length - 1 - [...counts].reverse().findIndex(([, c]) => c > 0);
  for (const mark of [p50, p95]) {
    if (mark == null) continue;
    const idx = bounds.findIndex((b) => b >= mark);
    if (idx >= 0) { lo = lo < 0 ? idx : Math.min(lo, idx); hi = Math.max(hi, idx); }
  }
  if (lo < 0) {
    root.append(svg("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "none" }, "waiting for streamed requests…"));
    el.replaceChildren(root);
    return;
  }
  lo = Math.max(0, lo - 1); hi = Math.min(counts.length - 1, hi + 1);
  const shown = counts.slice(lo, hi + 1);
  const pad = { l: 30, r: 30, t: 26, b: 30 };  // room for half a bucket label at either end
  const w = (width - pad.l - pad.r) / shown.length, top = Math.max(1, ...shown.map(([, c]) => c));
  const baseY = height - pad.b;
  const widest = Math.max(...shown.map(([le]) => ms(le).length - 2));  // "≤" and the number, in characters
  const labelEvery = Math.max(1, Math.ceil((widest * 7.5 + 8) / w));
  shown.forEach(([le, c], i) => {
    const h = (baseY - pad.t) * c / top;
    root.append(svg("rect", { class: "bar", "data-count": c, x: pad.l + i * w + 2, y: baseY - h, width: Math.max(1, w - 4), height: h, rx: 3 }));
    if (i % labelEvery === 0) {  // labels that do not run into each other
      root.append(svg("text", { x: pad.l + (i + 0.5) * w, y: height - 8, "text-anchor": "middle" },
        `≤${ms(le).replace(" ms", "")}`));
    }
  });
  root.append(svg("line", { class: "axis", x1: pad.l, x2: width - pad.r, y1: baseY, y2: baseY }));
  // a value's x: within its bucket, linearly
  const xOf = (v) => {
    for (let i = 0; i < shown.length; i++) {
      const upper = shown[i][0], lower = i ? shown[i - 1][0] : (lo ? counts[lo - 1][0] : 0);
      if (v <= upper) return pad.l + (i + Math.max(0, Math.min(1, (v - lower) / ((upper - lower) || 1)))) * w;
    }
    return width - pad.r;
  };
  const marker = (v, cls, label, anchorRight, y) => {
    if (v == null) return;
    const x = xOf(v);
    if (x > width - 140) anchorRight = true;  // keep the label inside the chart
    root.append(svg("line", { class: cls, x1: x, x2: x, y1: y + 4, y2: baseY }));
    root.append(svg("text", { class: `tag ${cls}`, x: x + (anchorRight ? -6 : 6), y,
      "text-anchor": anchorRight ? "end" : "start" }, label));
  };
  marker(p50, "profile", "profile p50", true, pad.t - 12);
  const crowded = p50 != null && p95 != null && Math.abs(xOf(p95) - xOf(p50)) < 100;  // the tags would meet
  marker(p95, "profile", "profile p95", false, crowded ? pad.t + 24 : pad.t - 12);
  marker(quantile(hist, 0.5), "measured", "measured p50", false, pad.t + 8);
  el.replaceChildren(root);
}

function pill(text, kind) {
  const span = document.createElement("span");
  span.className = `pill ${kind}`;
  span.textContent = text;
  return span;
}

function renderRequests(recent) {
  const body = document.querySelector("#requests tbody");
  $("requests-empty").hidden = recent.length > 0;
  const rows = [...recent].reverse();
  const newest = lastIndex;
  body.replaceChildren(...rows.map((r) => {
    const tr = document.createElement("tr");
    const cells = [
      new Date(r.time * 1000).toLocaleTimeString([], { hour12: false }),
      null, r.endpoint, r.stream ? "✓" : "–", null, null,
      r.ttft_ms == null ? "–" : `${Math.round(r.ttft_ms)} ms`,
      r.output_tokens == null ? "–" : `${count(r.input_tokens)} → ${count(r.output_tokens)}`,
    ];
    cells.forEach((value, i) => {
      const td = document.createElement("td");
      if (i >= 6) td.className = "num";
      if (i === 1) {
        const dot = document.createElement("i");
        dot.className = "dot";
        dot.style.background = color(r.model);
        td.append(dot, r.model);
      } else if (i === 4) {
        const [status, kind] = statusOf(r);
        td.append(pill(status, kind));
        if (r.warnings && r.warnings.length) {  // accepted without being known (llmsim/shared/compat.py)
          const warned = pill(`${r.warnings.length} warning${r.warnings.length > 1 ? "s" : ""}`, "warn");
          warned.title = r.warnings.join("\n");
          warned.className += " warnings";
          td.append(" ", warned);
        }
      } else if (i === 5) {
        td.append(r.fault ? pill(r.fault, "warn") : r.rate_limited ? pill("rate limited", "bad") : pill("–", "none"));
      } else {
        td.textContent = value;
      }
      tr.append(td);
    });
    if (r.index > newest && newest) tr.className = "fresh";
    if (r.response_id) {
      tr.classList.add("link");
      tr.title = r.response_id;
      tr.onclick = () => openResponse(r.response_id);
    }
    return tr;
  }));
  if (recent.length) lastIndex = Math.max(lastIndex, ...recent.map((r) => r.index));
}

// A stream a fault cut is a fault, whatever HTTP status its headers went out with: never a green 200.
const CUTS = { stream_drop: "dropped", stream_failed: "failed", stream_error: "error event", stream_malformed: "malformed" };
function statusOf(r) {
  if (r.status == null) return ["running", "running"];
  if (r.finished_reason === "abort" || (r.fault in CUTS && r.finished_reason == null)) {
    return [r.fault in CUTS ? CUTS[r.fault] : "cut", "bad"];
  }
  if (r.status < 400 && r.stream && r.finished_reason == null) return ["streaming", "running"];
  return [String(r.status), r.status < 400 ? "ok" : "bad"];
}

function describeRule(rule) {
  const parts = [];
  for (const key of ["first", "every", "probability", "requests", "models", "endpoints", "seconds", "after_events", "after_tokens"]) {
    if (rule[key] != null) parts.push(`${key}=${Array.isArray(rule[key]) ? rule[key].join(",") : rule[key]}`);
  }
  return parts.join(" · ") || "every request";
}

function describeTurn(turn) {
  const parts = [];
  if (turn.fault) parts.push(`fault ${turn.fault.kind}`);
  if (turn.tool_calls && turn.tool_calls.length) parts.push(`calls ${turn.tool_calls.map((c) => c.name).join(", ")}`);
  if (turn.text != null) parts.push(`“${turn.text.length > 60 ? turn.text.slice(0, 57) + "…" : turn.text}”`);
  return parts.join(" · ") || "the simulator answers";
}

function listItem(label, text, cls) {
  const li = document.createElement("li");
  if (cls) li.className = cls;
  const b = document.createElement("b");
  b.textContent = label;
  li.append(b, text);
  li.title = `${label} ${text}`;
  return li;
}

function renderChaos(state) {
  const box = $("chaos");
  box.classList.toggle("paused", state.paused);
  $("paused-badge").hidden = !state.paused;
  const button = $("pause");
  button.textContent = state.paused ? "Resume faults" : "Pause faults";
  button.classList.toggle("paused", state.paused);
  const parts = [];
  const h = (text) => { const el = document.createElement("h3"); el.textContent = text; return el; };
  parts.push(h(`Fault rules (${state.fault_rules.length})`));
  const rules = document.createElement("ul");
  rules.className = "rules";
  if (!state.fault_rules.length) rules.append(listItem("none", " — add some with --fault or PUT /llmsim/admin/faults"));
  for (const rule of state.fault_rules) rules.append(listItem(rule.name || rule.kind, describeRule(rule)));
  parts.push(rules);
  const limits = state.rate_limits || {};
  if (limits.rpm || limits.tpm) {
    parts.push(h("Rate limits"));
    const ul = document.createElement("ul");
    ul.append(listItem("limit", [limits.rpm && `${limits.rpm} RPM`, limits.tpm && `${limits.tpm} TPM`].filter(Boolean).join(" · ")));
    parts.push(ul);
  }
  parts.push(h("Scenario"));
  const scenario = document.createElement("ul");
  if (!state.scenario) {
    scenario.append(listItem("none", " — load one with --scenario or /llmsim/admin/scenarios"));
  } else {
    const s = state.scenario;
    scenario.append(listItem(s.name, ` · ${s.requests} requests · turn ${Math.min(s.position, s.turns)}/${s.turns}` +
      (s.rules ? ` · ${s.rules} rules` : "")));
    scenario.append(listItem(`next: ${s.next.step}`, ` ${describeTurn(s.next)}`, "next"));
  }
  parts.push(scenario);
  parts.push(h("Server"));
  const server = document.createElement("ul");
  const byStatus = {};
  for (const r of state.requests) byStatus[r.status] = (byStatus[r.status] || 0) + r.count;
  const statuses = Object.entries(byStatus).sort((a, b) => b[1] - a[1]).map(([st, n]) => `${st} × ${count(n)}`);
  server.append(listItem("answers", ` ${statuses.join(" · ") || "none yet"}`));
  const stored = state.store_entries || {};
  server.append(listItem("store", ` ${count(stored.responses || 0)} responses · ${count(stored.conversations || 0)} conversations` +
    (state.background_queue ? ` · ${count(state.background_queue)} background` : "")));
  parts.push(server);
  box.replaceChildren(...parts);
}

// --- the stored response and its events ---------------------------------------------------------------------
async function openResponse(id) {
  $("modal-title").textContent = id;
  $("modal-response").textContent = "loading…";
  $("modal-events").replaceChildren();
  $("modal-count").textContent = "";
  $("modal").hidden = false;
  try {
    const data = await call(`/llmsim/ui/api/responses/${encodeURIComponent(id)}`);
    $("modal-response").textContent = JSON.stringify(data.response, null, 2);
    $("modal-count").textContent = `(${data.events_total})`;
    $("modal-events").replaceChildren(...data.events.map((e) => {
      const li = document.createElement("li");
      const details = document.createElement("details");
      const summary = document.createElement("summary");
      const code = document.createElement("code");
      code.textContent = e.type;
      summary.append(code);
      const pre = document.createElement("pre");
      try {
        const event = JSON.parse(e.data);
        pre.textContent = JSON.stringify(event, null, 2);
        if (typeof event.delta === "string") {
          const text = document.createElement("span");
          text.className = "delta";
          text.textContent = ` ${JSON.stringify(event.delta)}`;
          summary.append(text);
        }
      } catch { pre.textContent = e.data; }
      details.append(summary, pre);
      li.append(details);
      return li;
    }));
  } catch (err) {
    $("modal-response").textContent = `Not in the store (store=false, expired, or served by another worker).\n${err.message}`;
  }
}

// --- controls ---------------------------------------------------------------------------------------------
$("modal-close").onclick = () => { $("modal").hidden = true; };
$("modal").onclick = (e) => { if (e.target === $("modal")) $("modal").hidden = true; };
document.addEventListener("keydown", (e) => { if (e.key === "Escape") $("modal").hidden = true; });

$("pause").onclick = async () => {
  const paused = latest && latest.paused;
  await call(`/llmsim/admin/faults/${paused ? "resume" : "pause"}`, { method: "POST" });
  render(await call(STATE_URL));
};

// Prometheus counters only go up (a scrape must see a reset as a restart); the page counts from a baseline.
$("reset").onclick = async () => {
  await call("/llmsim/admin/faults/reset", { method: "POST" });
  const state = await call(STATE_URL);
  baseline = {
    models: Object.fromEntries(state.models.map((m) => [m.name, m])),
    faults: { ...state.faults }, rate_limited: state.rate_limited, t: state.time,
  };
  localStorage.setItem(BASE_STORE, JSON.stringify(baseline));
  history = [];
  lastIndex = 0;
  render(state);
};

$("login-form").onsubmit = (e) => {
  e.preventDefault();
  sessionStorage.setItem(KEY_STORE, $("login-key").value);
  $("login").hidden = true;
};

window.addEventListener("resize", () => {
  for (const [id, chart] of Object.entries(charts)) chart.plot.setSize(chartSize($(id)));
  if (latest) renderHistograms(latest.models);
});

poll();
