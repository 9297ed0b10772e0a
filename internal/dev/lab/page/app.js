// The live lab page: reads the state from /api/events once a second and
// draws it; sends copilot lines to /api/copilot. No library, no build.
"use strict";

const NS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

// niceStep rounds a tick step up to 1, 2 or 5 times a power of ten.
function niceStep(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5]) if (v <= m * p) return m * p;
  return 10 * p;
}

// tickLabel writes v with as many decimals as the step needs.
function tickLabel(v, step) {
  const d = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return v.toFixed(d);
}

// chart draws series over the seconds into svg, with its legend inside
// the frame above the plot area and the changes as dashed marks.
// A series: {name, color, width, dash, opacity, values}.
function chart(svg, seconds, series, opts) {
  const box = svg.viewBox.baseVal;
  const W = box.width, H = box.height;
  const m = { l: 44, r: 10, t: 22, b: 20 };
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const ts = seconds.map((s) => s.t);
  const t0 = ts.length ? ts[0] : 0, t1 = ts.length ? Math.max(ts[ts.length - 1], t0 + 10) : 10;
  let most = 0;
  for (const s of series) for (const v of s.values) most = Math.max(most, v);
  const step = niceStep((most * 1.05) / 4);
  const top = step * Math.max(1, Math.ceil((most * 1.05) / step));
  const x = (t) => m.l + ((t - t0) / (t1 - t0)) * (W - m.l - m.r);
  const y = (v) => H - m.b - (v / top) * (H - m.t - m.b);
  for (let v = 0; v <= top + step / 2; v += step) {
    el("line", { x1: m.l, x2: W - m.r, y1: y(v), y2: y(v), class: "grid" }, svg);
    const label = el("text", { x: m.l - 4, y: y(v) + 3, "text-anchor": "end" }, svg);
    label.textContent = tickLabel(v, step);
  }
  const xstep = niceStep((t1 - t0) / 6);
  for (let t = Math.ceil(t0 / xstep) * xstep; x(t) < W - m.r - 60; t += xstep) {
    const label = el("text", { x: x(t), y: H - 6, "text-anchor": "middle" }, svg);
    label.textContent = t;
  }
  el("line", { x1: m.l, x2: m.l, y1: m.t, y2: H - m.b, class: "axis" }, svg);
  el("line", { x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b, class: "axis" }, svg);
  const xl = el("text", { x: W - m.r, y: H - 6, "text-anchor": "end" }, svg);
  xl.textContent = "second " + t1;
  const yl = el("text", { x: 4, y: 12 }, svg);
  yl.textContent = opts.y;
  for (const c of opts.changes || []) {
    if (c.t < t0 || c.t > t1) continue;
    el("line", { x1: x(c.t), x2: x(c.t), y1: m.t, y2: H - m.b, class: "mark" }, svg);
    const ct = el("text", { x: x(c.t) + 3, y: m.t + 10 }, svg);
    ct.textContent = c.text;
  }
  let lx = m.l + 60;
  for (const s of series) {
    const pts = s.values.map((v, i) => x(ts[i]).toFixed(1) + "," + y(Math.max(v, 0)).toFixed(1)).join(" ");
    el("polyline", { points: pts, fill: "none", stroke: s.color, "stroke-width": s.width || 1.6,
      "stroke-dasharray": s.dash || "", "stroke-opacity": s.opacity || 1, "stroke-linejoin": "round" }, svg);
    el("line", { x1: lx, x2: lx + 18, y1: 10, y2: 10, stroke: s.color, "stroke-width": Math.min(s.width || 1.6, 6),
      "stroke-dasharray": s.dash || "", "stroke-opacity": s.opacity || 1 }, svg);
    const t = el("text", { x: lx + 22, y: 13 }, svg);
    t.textContent = s.name;
    lx += 30 + 6 * s.name.length;
  }
}

function fmt(v, digits) {
  return v === undefined || v === null ? "–" : Number(v).toFixed(digits);
}

function pct(share) {
  return (100 * share).toPrecision(2).replace(/\.?0+$/, "") + "%";
}

function render(st) {
  window.lab = st;
  const k = st.knobs, now = st.now, last = st.seconds[st.seconds.length - 1] || {};
  $("knobs").textContent = `rate ${k.rate}/s` + (k.spike_factor ? ` × ${k.spike_factor} spike (${k.spike_left_s}s left)` : "") +
    ` · ${pct(k.lost_acks)} acks lost · idempotency ${k.idempotency ? "on" : "off"} · provider ${k.profile.replace("_", " ")} · second ${st.t}`;
  $("fig-offered").textContent = fmt(last.offered, 0);
  $("fig-rate").textContent = `${fmt(now.offered, 0)}/s over ${now.seconds} s`;
  $("fig-accepted").textContent = fmt(last.accepted, 0);
  $("fig-p99").textContent = fmt(last.p99_ms, 0);
  $("fig-depth").textContent = fmt(last.queue_depth, 0);
  $("fig-oldest").textContent = fmt(last.oldest_age_s, 1);
  $("fig-lost").textContent = pct(now.lost_acks || 0);
  $("fig-charged").textContent = fmt(last.charged, 0);
  $("fig-redeliveries").textContent = fmt(last.redeliveries, 0);
  $("fig-idempotency").textContent = k.idempotency ? "on" : "off";
  $("fig-duplicates").textContent = fmt(last.duplicates, 0);
  $("fig-charges-total").textContent = st.totals.charged;
  $("fig-dup-total").textContent = st.totals.duplicates;
  $("fig-profile").textContent = k.profile.replace("_", " ");

  const S = st.seconds, ch = st.changes;
  const col = (f) => S.map(f);
  chart($("chart-rate"), S, [
    { name: "offered", color: "#7b8794", width: 3, opacity: 0.6, values: col((s) => s.offered) },
    { name: "accepted", color: "#2357a6", width: 1.6, dash: "5 3", values: col((s) => s.accepted) },
    { name: "charged", color: "#1e8a4c", width: 1.4, values: col((s) => s.charged) },
  ], { y: "per second", changes: ch });
  // Redeliveries are a wide pale band and duplicate charges a thin dark
  // line on it: where they are equal, both still show.
  chart($("chart-dup"), S, [
    { name: "redeliveries", color: "#6aa7e0", width: 7, opacity: 0.45, values: col((s) => s.redeliveries) },
    { name: "duplicate charges", color: "#b3261e", width: 1.6, values: col((s) => s.duplicates) },
  ], { y: "per second", changes: ch });
  chart($("chart-depth"), S, [
    { name: "queue depth", color: "#6b3fa0", width: 1.6, values: col((s) => Math.max(s.queue_depth, 0)) },
  ], { y: "messages", changes: ch });
  chart($("chart-oldest"), S, [
    { name: "oldest unsettled event", color: "#c26a00", width: 1.6, values: col((s) => s.oldest_age_s) },
  ], { y: "seconds", changes: [] });
  chart($("chart-latency"), S, [
    { name: "p50", color: "#2357a6", width: 1.6, values: col((s) => s.p50_ms) },
    { name: "p99", color: "#b3261e", width: 1.6, dash: "5 3", values: col((s) => s.p99_ms) },
  ], { y: "ms", changes: ch });

  renderBeforeAfter(st.last);
  renderCapacity(st.capacity, now.seconds);
  renderAnswers(st.answers);
}

function renderBeforeAfter(last) {
  if (!last) return;
  const rows = [
    ["offered/s", "offered", 0], ["charged/s", "charged", 0], ["duplicate charges/s", "duplicates", 2],
    ["redeliveries/s", "redeliveries", 2], ["queue depth", "queue_depth", 0], ["oldest unsettled (s)", "oldest_age_s", 1],
    ["p99 webhook → charge (ms)", "p99_ms", 0],
  ];
  let h = `<p>after <b>${escapeHTML(last.change.text)}</b> at second ${last.change.t}</p><table><tr><th></th>` +
    `<th>${last.before.seconds} s before</th><th>${last.after.seconds} s since</th><th>last ${last.recent.seconds} s</th></tr>`;
  for (const [name, key, d] of rows) {
    h += `<tr data-key="${key}"><td>${name}</td><td class="before">${fmt(last.before[key], d)}</td><td class="after">${fmt(last.after[key], d)}</td><td class="recent">${fmt(last.recent[key], d)}</td></tr>`;
  }
  $("before-after").innerHTML = h + "</table>";
}

function renderCapacity(rows, seconds) {
  let h = `<tr><th></th><th>design</th><th>at these settings</th><th>measured, last ${seconds} s</th></tr>`;
  for (const r of rows) h += `<tr><td>${r.quantity}</td><td>${r.design}</td><td>${r.expected}</td><td>${r.measured}</td></tr>`;
  $("capacity").innerHTML = h;
}

function renderAnswers(answers) {
  let h = "<dl>";
  for (const a of answers) h += `<dt>${escapeHTML(a.question)}</dt><dd>${escapeHTML(a.answer)}</dd>`;
  $("answers").innerHTML = h + "</dl>";
}

function escapeHTML(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

function say(cls, text) {
  const p = document.createElement("div");
  p.className = cls;
  p.textContent = text;
  $("transcript").appendChild(p);
  $("transcript").scrollTop = $("transcript").scrollHeight;
}

async function ask(text) {
  say("you", "› " + text);
  try {
    const resp = await fetch("api/copilot", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ text }) });
    const r = await resp.json();
    say("reply", r.reply || r.error);
  } catch (e) {
    say("reply", "the lab did not answer: " + e);
  }
}

document.querySelectorAll("button[data-prompt]").forEach((b) => b.addEventListener("click", () => ask(b.dataset.prompt)));
$("copilot-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const text = $("copilot-input").value.trim();
  if (text) ask(text);
  $("copilot-input").value = "";
});
say("reply", "Type a change or a question, or press a button. Type help for what I understand.");
new EventSource("api/events").onmessage = (ev) => render(JSON.parse(ev.data));
