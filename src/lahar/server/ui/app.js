// Lahar dashboard: plain JavaScript over the server's HTTP API (no build step).
// Views: the queue tree with allocated / deserved / capability bars and admin actions (a queue's
// waiting jobs and events below it when selected), waiting jobs with their position and reason,
// job tasks, events, and usage over time. Authenticated with the same bearer tokens as the CLI:
// pasted into the sign-in box or given once as ?token=..., kept in localStorage.
"use strict";

const TOKEN_KEY = "lahar.token";
const state = { view: "queues", me: null, timer: null, errors: {}, selected: null, detail: null };

function token() { return localStorage.getItem(TOKEN_KEY) || ""; }

// ?token=... signs in once: the token is kept and removed from the address bar (and history).
(function tokenFromUrl() {
  const params = new URLSearchParams(location.search);
  if (!params.has("token")) return;
  localStorage.setItem(TOKEN_KEY, params.get("token").trim());
  params.delete("token");
  const query = params.toString();
  history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
})();

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
  return [...names].filter(n => n !== "pods" && (q.deserved[n] || q.allocated[n] || q.capability[n] !== undefined)).sort();
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
  const fail = e => { state.errors[q.name] = e.message; errorBox.textContent = e.message; };
  const clear = () => { delete state.errors[q.name]; errorBox.textContent = ""; };
  const act = action => async () => {
    clear();
    try { await api("POST", `/queues/${encodeURIComponent(q.name)}/${action}`); await refresh(); }
    catch (e) { fail(e); }
  };
  const weight = el("input", { class: "weight", type: "number", min: "1", value: q.weight, "aria-label": `weight of ${q.name}` });
  const save = async () => {
    clear();
    try {
      const path = `/apis/scheduling.volcano.sh/v1beta1/queues/${encodeURIComponent(q.name)}`;
      await api("PATCH", path, { spec: { weight: Number(weight.value) } });  // merge patch: no stale version
      await refresh();
    } catch (e) { fail(e); }
  };
  weight.addEventListener("keydown", event => { if (event.key === "Enter") save(); });
  return el("div", { class: "actions" },
    ["open", "close", "suspend", "resume"].map(a => el("button", { type: "button", "data-action": a, "data-queue": q.name, onclick: act(a) }, a)),
    " weight ", weight, el("button", { type: "button", "data-action": "weight", onclick: save }, "set"));
}

function queueNode(q, children) {
  const errorBox = el("div", { class: "inline-error", "data-error-for": q.name, role: "alert" }, state.errors[q.name] || "");
  const counts = q.counts || {};
  const select = () => { state.selected = state.selected === q.name ? null : q.name; refresh(); };
  const row = el("div", { class: "queue-row" + (state.selected === q.name ? " selected" : ""), "data-queue": q.name },
    el("div", {}, el("a", { class: "queue-name", href: "#queues", title: "show its waiting jobs and events", onclick: select }, q.name), " ",
      el("span", { class: "badge " + q.state, "data-state": q.state }, q.state)),
    el("div", { class: "bar-label counts" }, `w ${q.weight}`, el("br"), `run ${counts.running || 0} · wait ${(counts.pending || 0) + (counts.inqueue || 0)}`),
    bars(q),
    q.name === "root" ? el("div") : queueActions(q, errorBox),
    errorBox);
  const panel = state.selected === q.name ? el("div", { class: "queue-panel", id: "queue-panel" }, "loading...") : null;
  return el("div", { class: "queue" }, row, panel, children);
}

// The root's share is the whole cluster: its deserved is what its children deserve together.
function withRootShare(queues) {
  const root = queues.find(q => q.name === "root");
  if (root && !Object.keys(root.deserved).length) {
    for (const child of queues.filter(q => q.parent === "root"))
      for (const [k, v] of Object.entries(child.deserved)) root.deserved[k] = (root.deserved[k] || 0) + v;
  }
  return queues;
}

async function renderQueuePanel(name) {
  const panel = document.getElementById("queue-panel");
  if (!panel) return;
  const [{ items }, events] = await Promise.all([
    api("GET", "/apis/scheduling.volcano.sh/v1beta1/podgroups"),
    api("GET", `/lahar/v1/events?for=queue/${encodeURIComponent(name)}&limit=20`),
  ]);
  const waiting = waitingRows(items.filter(g => (g.spec.queue || "default") === name));
  panel.replaceChildren(
    el("h3", {}, `jobs in ${name}, in the order they are considered (waiting ones numbered)`),
    waiting.length ? jobTable(waiting) : el("p", { class: "muted" }, "no unfinished jobs"),
    el("h3", {}, `events of ${name} and its jobs`),
    eventTable(events.items.slice().reverse()));
}

async function renderQueues() {
  if (document.activeElement && document.activeElement.classList.contains("weight")) return; // being edited
  const queues = withRootShare((await api("GET", "/lahar/v1/queues/tree")).queues);
  const byParent = {};
  for (const q of queues) (byParent[q.parent || ""] = byParent[q.parent || ""] || []).push(q);
  const build = q => queueNode(q, (byParent[q.name] || []).sort((a, b) => a.name.localeCompare(b.name)).map(build));
  const roots = (byParent[""] || []).concat(queues.filter(q => q.parent && !queues.some(p => p.name === q.parent)));
  document.getElementById("queue-tree").replaceChildren(...roots.map(build));
  if (state.selected) await renderQueuePanel(state.selected);
}

// ---------------------------------------------------------------- jobs

function reasonOf(group) {
  const text = (group.metadata.annotations || {})["lahar.dev/pending-reason"];
  return text ? JSON.parse(text) : null;
}

// Unfinished podgroups in the order the queue considers them (priority, then submission), each
// waiting one with its position and reason.
function waitingRows(groups) {
  const order = (a, b) => ((b.spec.priority || 0) - (a.spec.priority || 0)) ||
    (a.metadata.creationTimestamp || "").localeCompare(b.metadata.creationTimestamp || "") ||
    a.metadata.name.localeCompare(b.metadata.name);
  let position = 0;
  return groups.filter(g => (g.status || {}).phase !== "Completed").sort(order).map(g => {
    const phase = (g.status || {}).phase || "Pending";
    const waiting = phase === "Pending" || phase === "Inqueue";
    return { group: g, key: `${g.metadata.namespace}/${g.metadata.name}`, phase, position: waiting ? ++position : null, reason: reasonOf(g) };
  });
}

function jobTable(rows) {
  return el("table", { class: "jobs" },
    el("colgroup", {}, el("col", { class: "pos" }), el("col", { class: "job" }), el("col", { class: "phase" }), el("col")),
    el("thead", {}, el("tr", {}, el("th", {}, "#"), el("th", {}, "job"), el("th", {}, "phase"), el("th", {}, "why"))),
    el("tbody", {}, rows.map(r => el("tr", { "data-job": r.key, "data-position": r.position || "" },
      el("td", {}, r.position ? String(r.position) : ""),
      el("td", {}, el("a", { href: "#jobs", onclick: () => { state.detail = r.group; show("jobs"); } }, r.key)),
      el("td", {}, r.phase),
      el("td", { class: "reason" }, r.reason ? [el("span", { class: "kind" }, r.reason.kind), " ", r.reason.message] : "")))));
}

async function renderJobs() {
  const { items } = await api("GET", "/apis/scheduling.volcano.sh/v1beta1/podgroups");
  const byQueue = {};
  for (const g of items) (byQueue[g.spec.queue || "default"] = byQueue[g.spec.queue || "default"] || []).push(g);
  const blocks = Object.keys(byQueue).sort().map(queue => {
    const rows = waitingRows(byQueue[queue]);
    return rows.length ? el("div", { "data-queue-jobs": queue }, el("h3", {}, `queue ${queue}`), jobTable(rows)) : null;
  }).filter(Boolean);
  document.getElementById("job-list").replaceChildren(...(blocks.length ? blocks : [el("p", { class: "muted" }, "no unfinished jobs")]));
  if (state.detail) await renderJobDetail(state.detail);
}

async function renderJobDetail(group) {
  const ns = group.metadata.namespace, name = group.metadata.name;
  const { items } = await api("GET", `/api/v1/namespaces/${ns}/pods`);
  const groupOf = p => (p.metadata.annotations || {})["scheduling.k8s.io/group-name"] || (p.metadata.labels || {})["scheduling.k8s.io/group-name"];
  const tasks = items.filter(p => groupOf(p) === name).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const events = await api("GET", `/lahar/v1/events?for=job/${encodeURIComponent(ns)}/${encodeURIComponent(name)}&limit=20`);
  document.getElementById("job-detail").replaceChildren(el("h3", {}, `tasks of ${ns}/${name}`),
    el("table", { id: "task-table" }, el("thead", {}, el("tr", {}, el("th", {}, "task"), el("th", {}, "status"), el("th", {}, "node"), el("th", {}, "requests"))),
      el("tbody", {}, tasks.map(p => el("tr", { "data-task": p.metadata.name }, el("td", {}, p.metadata.name), el("td", {}, (p.status || {}).phase || "Pending"),
        el("td", {}, p.spec.nodeName || ""), el("td", {}, requestsText(p)))))),
    el("h3", {}, `events of ${ns}/${name}`), eventTable(events.items.slice().reverse()));
}

function requestsText(pod) {
  const total = {};
  for (const c of pod.spec.containers || []) for (const [k, v] of Object.entries((c.resources || {}).requests || {})) total[k] = total[k] ? total[k] + "+" + v : v;
  return Object.entries(total).map(([k, v]) => `${k}=${v}`).join(", ");
}

// ---------------------------------------------------------------- events and usage

function eventTable(items) {
  if (!items.length) return el("p", { class: "muted" }, "no events");
  return el("table", { class: "events" }, el("thead", {}, el("tr", {}, ["time", "object", "type", "reason", "message"].map(h => el("th", {}, h)))),
    el("tbody", {}, items.map(e => el("tr", { class: "event " + (e.type || ""), "data-reason": e.reason || "" },
      el("td", { class: "time" }, new Date((e.timestamp || 0) * 1000).toLocaleTimeString()),
      el("td", {}, `${((e.involvedObject || {}).kind || "").toLowerCase()}/${(e.involvedObject || {}).name || ""}`),
      el("td", {}, e.type || ""), el("td", {}, e.reason || ""), el("td", {}, e.message || "")))));
}

async function renderEvents() {
  const filter = document.getElementById("event-for").value.trim();
  const audit = document.getElementById("event-audit").checked;
  const query = "?limit=300" + (filter ? "&for=" + encodeURIComponent(filter) : "");
  const box = document.getElementById("event-list");
  try {
    const { items } = await api("GET", "/lahar/v1/events" + query);
    box.replaceChildren(eventTable(items.filter(e => audit || e.type !== "Audit").reverse()));
    document.getElementById("event-error").textContent = "";
  } catch (e) { box.replaceChildren(); document.getElementById("event-error").textContent = e.message; }
}

function lineChart(title, series) {
  const width = 640, height = 160, pad = 30;
  const points = Object.values(series).flat();
  if (!points.length) return el("p", {}, `${title}: no data yet`);
  const xs = points.map(p => p[0]), ys = points.map(p => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs) || 1, y1 = Math.max(...ys, 1e-9) * 1.1;
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
    if (pts.length <= 48) for (const [x, y] of pts) { // few points (hours): dots, so one point shows
      const dot = document.createElementNS(ns, "circle");
      dot.setAttribute("cx", sx(x)); dot.setAttribute("cy", sy(y)); dot.setAttribute("r", "3"); dot.setAttribute("fill", colors[i % colors.length]);
      svg.append(dot);
    }
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", width - pad - 120); label.setAttribute("y", 14 + 12 * i); label.setAttribute("fill", colors[i % colors.length]);
    label.setAttribute("font-size", "11"); label.textContent = name;
    svg.append(path, label);
  });
  const text = (x, y, content, anchor) => {
    const t = document.createElementNS(ns, "text");
    t.setAttribute("x", x); t.setAttribute("y", y); t.setAttribute("font-size", "10"); t.setAttribute("fill", "#777");
    if (anchor) t.setAttribute("text-anchor", anchor);
    t.textContent = content; svg.append(t);
  };
  const resource = title.split(" ")[0];
  text(pad - 4, pad, human(resource, y1 / 1.1), "end"); text(pad - 4, height - pad, "0", "end");
  text(pad, height - pad + 14, new Date(x0 * 1000).toLocaleTimeString(), "start");
  text(width - pad, height - pad + 14, new Date(x1 * 1000).toLocaleTimeString(), "end");
  return el("div", { class: "chart-box", "data-resource": resource }, el("h3", {}, title), svg);
}

async function renderUsage() {
  const box = document.getElementById("usage-charts");
  try {
    const since = document.getElementById("usage-since").value || "7d";
    const [series, usage] = await Promise.all([api("GET", "/lahar/v1/usage/series?since=" + encodeURIComponent(since)),
      api("GET", "/lahar/v1/usage?since=" + encodeURIComponent(since))]);
    const charts = Object.entries(series.resources || {}).sort().map(([resource, per]) => lineChart(`${resource} allocated per queue (recent)`, per));
    const hourly = Object.entries(series.hourly || {}).sort().map(([resource, per]) => lineChart(`${resource} in use per queue (hourly mean)`, per));
    box.replaceChildren(usageTable(usage.items), ...charts, ...hourly);
  } catch (e) { box.replaceChildren(el("p", { class: "error" }, e.message)); }
}

function usageTable(rows) {
  if (!rows.length) return el("p", { class: "muted" }, "no usage recorded in this period");
  const resources = [...new Set(rows.flatMap(r => Object.keys(r.usage)))].sort();
  const hours = (name, seconds) => name === "memory" ? (seconds / 3600 / 2 ** 30).toFixed(2) + " GiB-h" : (seconds / 3600).toFixed(2) + " h";
  return el("table", { id: "usage-table" },
    el("thead", {}, el("tr", {}, ["queue", "user", "jobs", "mean wait", "max wait", ...resources].map(h => el("th", {}, h)))),
    el("tbody", {}, rows.map(r => el("tr", { "data-queue": r.queue },
      el("td", {}, r.queue), el("td", {}, r.user), el("td", {}, r.jobs), el("td", {}, r.waitMean + " s"), el("td", {}, r.waitMax + " s"),
      resources.map(name => el("td", {}, hours(name, r.usage[name] || 0)))))));
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
document.getElementById("event-form").addEventListener("submit", event => { event.preventDefault(); refresh(); });
document.getElementById("usage-since").addEventListener("change", () => refresh());
window.addEventListener("hashchange", () => show(location.hash.slice(1)));
whoami().then(() => show(location.hash.slice(1) || "queues"));
state.timer = setInterval(refresh, 2000);
