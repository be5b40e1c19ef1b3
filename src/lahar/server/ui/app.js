// Lahar dashboard: plain JavaScript over the server's HTTP API (no build step).
// Views: the queue tree with allocated / deserved / capability bars and admin actions, waiting
// jobs with their position and reason, job tasks, events, and usage over time.
"use strict";

const TOKEN_KEY = "lahar.token";
const state = { view: "queues", me: null, timer: null };

function token() { return localStorage.getItem(TOKEN_KEY) || ""; }

async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (token()) headers["Authorization"] = "Bearer " + token();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (res.status === 401) { showLogin(data && data.message); throw new Error(data ? data.message : "unauthorized"); }
  if (!res.ok) {
    const causes = data && data.details && data.details.causes ? data.details.causes.map(c => c.message) : [];
    throw new Error(causes.length ? causes.join("\n") : (data && data.message) || res.statusText);
  }
  return data;
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) node.setAttribute(k, v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// ---------------------------------------------------------------- formatting

function human(name, value) {
  if (value === undefined || value === null) return "-";
  if (name === "memory") {
    const units = ["B", "Ki", "Mi", "Gi", "Ti"];
    let v = value, i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (Math.round(v * 10) / 10) + units[i];
  }
  return String(Math.round(value * 100) / 100);
}

function resourceNames(q) {
  const names = new Set([...Object.keys(q.deserved), ...Object.keys(q.allocated), ...Object.keys(q.capability)]);
  return [...names].filter(n => n !== "pods").sort();
}

// ---------------------------------------------------------------- queues

function bars(q) {
  return el("div", { class: "bars" }, resourceNames(q).map(name => {
    const a = q.allocated[name] || 0, d = q.deserved[name] || 0, c = q.capability[name];
    const scale = Math.max(a, d, c || 0, 1e-9);
    const pct = v => Math.min(100, 100 * v / scale) + "%";
    return el("div", {},
      el("div", { class: "bar", title: `${name}: allocated ${human(name, a)}, deserved ${human(name, d)}, capability ${c === undefined ? "none" : human(name, c)}` },
        c !== undefined ? el("span", { class: "capability", style: `width:${pct(c)}` }) : null,
        el("span", { class: "deserved", style: `width:${pct(d)}` }),
        el("span", { class: "allocated" + (a > d + 1e-9 ? " over" : ""), style: `width:${pct(a)}` })),
      el("div", { class: "bar-label" }, `${name} ${human(name, a)} / ${human(name, d)}${c !== undefined ? " / " + human(name, c) : ""}`));
  }));
}

function queueActions(q, errorBox) {
  const act = action => async () => {
    errorBox.textContent = "";
    try { await api("POST", `/queues/${q.name}/${action}`); await refresh(); }
    catch (e) { errorBox.textContent = e.message; }
  };
  const weight = el("input", { class: "weight", type: "number", min: "1", value: q.weight, "aria-label": `weight of ${q.name}` });
  const save = async () => {
    errorBox.textContent = "";
    try {
      const stored = await api("GET", `/apis/scheduling.volcano.sh/v1beta1/queues/${q.name}`);
      stored.spec.weight = Number(weight.value);
      await api("PUT", `/apis/scheduling.volcano.sh/v1beta1/queues/${q.name}`, stored);
      await refresh();
    } catch (e) { errorBox.textContent = e.message; }
  };
  return el("div", { class: "actions" },
    ["open", "close", "suspend", "resume"].map(a => el("button", { type: "button", "data-action": a, "data-queue": q.name, onclick: act(a) }, a)),
    " weight ", weight, el("button", { type: "button", "data-action": "weight", onclick: save }, "set"));
}

function queueNode(q, children) {
  const errorBox = el("div", { class: "inline-error", "data-error-for": q.name });
  const counts = q.counts || {};
  const row = el("div", { class: "queue-row", "data-queue": q.name },
    el("div", {}, el("span", { class: "queue-name" }, q.name), " ", el("span", { class: "badge " + q.state, "data-state": q.state }, q.state)),
    el("div", { class: "bar-label" }, `w ${q.weight}`, el("br"), `run ${counts.running || 0} · wait ${(counts.pending || 0) + (counts.inqueue || 0)}`),
    bars(q),
    q.name === "root" ? el("div") : queueActions(q, errorBox),
    errorBox);
  return el("div", { class: "queue" }, row, children);
}

async function renderQueues() {
  const { queues } = await api("GET", "/lahar/v1/queues/tree");
  const byParent = {};
  for (const q of queues) (byParent[q.parent || ""] = byParent[q.parent || ""] || []).push(q);
  const build = q => queueNode(q, (byParent[q.name] || []).sort((a, b) => a.name.localeCompare(b.name)).map(build));
  const roots = (byParent[""] || []).concat(queues.filter(q => q.parent && !queues.some(p => p.name === q.parent)));
  document.getElementById("queue-tree").replaceChildren(...roots.map(build));
}

// ---------------------------------------------------------------- jobs

function reasonOf(group) {
  const text = (group.metadata.annotations || {})["lahar.dev/pending-reason"];
  return text ? JSON.parse(text) : null;
}

async function renderJobs() {
  const { items } = await api("GET", "/apis/scheduling.volcano.sh/v1beta1/podgroups");
  const byQueue = {};
  for (const g of items) (byQueue[g.spec.queue || "default"] = byQueue[g.spec.queue || "default"] || []).push(g);
  const blocks = Object.keys(byQueue).sort().map(queue => {
    const groups = byQueue[queue].sort((a, b) => (a.metadata.creationTimestamp || "").localeCompare(b.metadata.creationTimestamp || ""));
    let position = 0;
    const rows = groups.filter(g => (g.status || {}).phase !== "Completed").map(g => {
      const phase = (g.status || {}).phase || "Pending", reason = reasonOf(g);
      const waiting = phase === "Pending" || phase === "Inqueue";
      const key = `${g.metadata.namespace}/${g.metadata.name}`;
      return el("tr", { "data-job": key },
        el("td", {}, waiting ? String(++position) : ""),
        el("td", {}, el("a", { href: "#jobs", onclick: () => renderJobDetail(g) }, key)),
        el("td", {}, phase),
        el("td", { class: "reason" }, reason ? [el("span", { class: "kind" }, reason.kind), " ", reason.message] : ""));
    });
    return el("div", {}, el("h3", {}, `queue ${queue}`),
      el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "#"), el("th", {}, "job"), el("th", {}, "phase"), el("th", {}, "why"))), el("tbody", {}, rows)));
  });
  document.getElementById("job-list").replaceChildren(...blocks);
}

async function renderJobDetail(group) {
  const ns = group.metadata.namespace, name = group.metadata.name;
  const { items } = await api("GET", `/api/v1/namespaces/${ns}/pods`);
  const tasks = items.filter(p => ((p.metadata.annotations || {})["scheduling.k8s.io/group-name"]) === name);
  document.getElementById("job-detail").replaceChildren(el("h3", {}, `tasks of ${ns}/${name}`),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "task"), el("th", {}, "status"), el("th", {}, "node"))),
      el("tbody", {}, tasks.map(p => el("tr", {}, el("td", {}, p.metadata.name), el("td", {}, (p.status || {}).phase || "Pending"), el("td", {}, p.spec.nodeName || ""))))));
}

// ---------------------------------------------------------------- events and usage

async function renderEvents() {
  const { items } = await api("GET", "/apis/lahar.dev/v1alpha1/events");
  items.sort((a, b) => (b.timestamp || 0) - (a.timestamp || 0));
  document.querySelector("#event-table tbody").replaceChildren(...items.slice(0, 200).map(e => el("tr", {},
    el("td", {}, new Date((e.timestamp || 0) * 1000).toLocaleString()),
    el("td", {}, `${(e.involvedObject || {}).kind || ""}/${(e.involvedObject || {}).name || ""}`),
    el("td", {}, e.type || ""), el("td", {}, e.reason || ""), el("td", {}, e.message || ""))));
}

function lineChart(title, series) {
  const width = 640, height = 160, pad = 30;
  const points = Object.values(series).flat();
  if (!points.length) return el("p", {}, `${title}: no data yet`);
  const xs = points.map(p => p[0]), ys = points.map(p => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs) || 1, y1 = Math.max(...ys, 1e-9);
  const sx = x => pad + (width - 2 * pad) * (x1 === x0 ? 0 : (x - x0) / (x1 - x0));
  const sy = y => height - pad - (height - 2 * pad) * y / y1;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart"); svg.setAttribute("width", width); svg.setAttribute("height", height);
  const colors = ["#2b6cb0", "#2f855a", "#c05621", "#6b46c1", "#b7791f", "#c53030"];
  Object.entries(series).forEach(([name, pts], i) => {
    const path = document.createElementNS(ns, "polyline");
    path.setAttribute("points", pts.map(([x, y]) => `${sx(x)},${sy(y)}`).join(" "));
    path.setAttribute("fill", "none"); path.setAttribute("stroke", colors[i % colors.length]); path.setAttribute("stroke-width", "2");
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", width - pad - 120); label.setAttribute("y", 14 + 12 * i); label.setAttribute("fill", colors[i % colors.length]);
    label.setAttribute("font-size", "11"); label.textContent = name;
    svg.append(path, label);
  });
  return el("div", {}, el("h3", {}, title), svg);
}

async function renderUsage() {
  const box = document.getElementById("usage-charts");
  try {
    const data = await api("GET", "/lahar/v1/usage/series");
    box.replaceChildren(...Object.entries(data.resources || {}).map(([resource, series]) => lineChart(`${resource} allocated per queue`, series)));
  } catch (e) { box.replaceChildren(el("p", { class: "error" }, e.message)); }
}

// ---------------------------------------------------------------- navigation

const RENDER = { queues: renderQueues, jobs: renderJobs, events: renderEvents, usage: renderUsage };

async function refresh() {
  try {
    await RENDER[state.view]();
    document.getElementById("status").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    document.getElementById("status").textContent = "error: " + e.message;
  }
}

function show(view) {
  state.view = RENDER[view] ? view : "queues";
  for (const section of document.querySelectorAll("section.view")) section.hidden = section.id !== state.view;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.dataset.view === state.view);
  refresh();
}

function showLogin(message) {
  document.getElementById("login").hidden = false;
  document.getElementById("login-error").textContent = message || "";
}

async function whoami() {
  try {
    state.me = await api("GET", "/lahar/v1/whoami");
    document.getElementById("who").textContent = state.me.user + (state.me.admin ? " (admin)" : "");
    document.getElementById("signout").hidden = !token();
    document.getElementById("login").hidden = true;
  } catch (e) { /* showLogin was called on 401 */ }
}

document.getElementById("login-form").addEventListener("submit", async event => {
  event.preventDefault();
  localStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
  await whoami();
  refresh();
});
document.getElementById("signout").addEventListener("click", () => { localStorage.removeItem(TOKEN_KEY); location.reload(); });
window.addEventListener("hashchange", () => show(location.hash.slice(1)));
whoami().then(() => show(location.hash.slice(1) || "queues"));
state.timer = setInterval(refresh, 2000);
