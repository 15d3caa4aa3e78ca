// Mecatl Studio: the page's state and views. Sessions on the left; the selected
// session's run, audit, catalog and state on the right. Every number and list it
// shows comes from the API (./api.js); the transcript is ./run.js, the charts
// ./charts.js.

import { api, ApiError, streamPrompt } from "./api.js";
import { latencyChart, timelineChart } from "./charts.js";
import { RunView, el } from "./run.js";

const $ = (id) => document.getElementById(id);

const state = {
  sessions: [],
  current: null,
  running: false,
  queue: [],
  models: { model: "", models: [] },
};

function say(text, error = false) {
  const status = $("status");
  status.textContent = text;
  status.classList.toggle("error", error);
}

function failed(error) {
  if (error instanceof ApiError && error.status === 401) {
    showLogin();
    return;
  }
  say(error.message ?? String(error), true);
}

const run = new RunView($("transcript"), $("events"), {
  approve: (askId, verdict) => api.approve(state.current, askId, verdict).catch(failed),
  elicit: (body) => api.elicit(state.current, body).catch(failed),
  cancelChild: (childId) => api.cancelChild(state.current, childId).catch(failed),
});

// ---- theme ----------------------------------------------------------------

function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}
applyTheme(localStorage.getItem("mecatl-theme"));
$("theme").addEventListener("click", () => {
  const dark =
    document.documentElement.dataset.theme === "dark" ||
    (!document.documentElement.dataset.theme && matchMedia("(prefers-color-scheme: dark)").matches);
  const next = dark ? "light" : "dark";
  localStorage.setItem("mecatl-theme", next);
  applyTheme(next);
});

// ---- login ----------------------------------------------------------------

function showLogin() {
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-token").focus();
}

$("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    await api.login($("login-token").value);
    $("login-token").value = "";
    $("login-error").textContent = "";
    $("login").hidden = true;
    await start();
  } catch (error) {
    $("login-error").textContent = error.message;
  }
});

// ---- sessions -------------------------------------------------------------

const short = (id) => id.slice(0, 8);

async function refreshSessions() {
  const { sessions } = await api.sessions();
  state.sessions = sessions;
  const list = $("sessions");
  list.replaceChildren(
    ...sessions.map((session) => {
      const when = new Date(session.modified_at).toLocaleString();
      const button = el(
        "button",
        {
          type: "button",
          class: "session-item",
          "data-testid": "session-item",
          "data-session": session.session_id,
          "aria-current": session.session_id === state.current ? "true" : "false",
          onclick: () => openSession(session.session_id),
        },
        el("span", { class: "title", text: session.title ?? `Session ${short(session.session_id)}` }),
        el("span", {
          class: "meta",
          text: [session.model, session.mode, session.state, `${session.turns} turns`, when]
            .filter(Boolean)
            .join(" · "),
        }),
      );
      return el("li", {}, button);
    }),
  );
  if (sessions.length === 0) list.append(el("li", { class: "muted", text: "No session yet." }));
  const current = sessions.find((session) => session.session_id === state.current);
  if (current?.title) $("session-title").textContent = current.title;
}

async function newSession() {
  try {
    const { session_id: id } = await api.create({});
    await refreshSessions();
    await openSession(id);
    $("prompt-input").focus();
  } catch (error) {
    failed(error);
  }
}

async function openSession(id) {
  if (state.running && id !== state.current) {
    say("A run is in progress here: stop it or wait before switching sessions.", true);
    return;
  }
  state.current = id;
  state.queue = [];
  $("queued").textContent = "";
  history.replaceState(null, "", `#session=${id}`);
  $("empty").hidden = true;
  $("session").hidden = false;
  const listed = state.sessions.find((session) => session.session_id === id);
  $("session-title").textContent = listed?.title ?? `Session ${short(id)}`;
  for (const item of document.querySelectorAll("[data-testid=session-item]")) {
    item.setAttribute("aria-current", item.dataset.session === id ? "true" : "false");
  }
  try {
    const [view, { events, prompts }] = await Promise.all([api.show(id), api.events(id)]);
    const promptOf = new Map(prompts.map((prompt) => [prompt.seq, prompt.text]));
    $("mode-select").value = view.mode;
    $("catalog-mode").value = view.mode;
    fillModels(view.model);
    run.reset();
    for (const event of events) {
      if (promptOf.has(event.seq)) run.user(promptOf.get(event.seq));
      run.apply(event);
    }
    run.setLive(false);
    say(`Session ${short(id)}: ${view.turns} turns, ${view.tool_calls} tool calls.`);
    await showTab(currentTab());
  } catch (error) {
    failed(error);
  }
}

function fillModels(selected) {
  const select = $("model-select");
  select.replaceChildren(...state.models.models.map((name) => el("option", { value: name, text: name })));
  select.value = selected ?? state.models.model;
}

$("new-session").addEventListener("click", newSession);

$("delete-session").addEventListener("click", async (event) => {
  const button = event.currentTarget;
  if (button.dataset.confirm !== "yes") {
    button.dataset.confirm = "yes";
    button.textContent = "Confirm delete";
    return;
  }
  button.dataset.confirm = "";
  button.textContent = "Delete";
  try {
    await api.remove(state.current);
    state.current = null;
    history.replaceState(null, "", "#");
    $("session").hidden = true;
    $("empty").hidden = false;
    await refreshSessions();
    say("Session deleted.");
  } catch (error) {
    failed(error);
  }
});

// ---- mode and model ---------------------------------------------------------

async function update(body, select, previous) {
  try {
    const view = await api.update(state.current, body);
    select.value = body.mode ?? view.model;
    say(body.mode ? `Mode: ${view.mode}.` : `Model: ${view.model} from the next run.`);
    await refreshSessions();
  } catch (error) {
    select.value = previous;
    failed(error);
  }
}

for (const [id, field] of [["mode-select", "mode"], ["model-select", "model"]]) {
  const select = $(id);
  select.addEventListener("focus", () => (select.dataset.previous = select.value));
  select.addEventListener("change", () => update({ [field]: select.value }, select, select.dataset.previous));
}

// ---- prompts ------------------------------------------------------------------

async function runPrompt(text) {
  const id = state.current;
  state.running = true;
  $("stop").disabled = false;
  run.user(text);
  run.setLive(true);
  say("Running…");
  try {
    await streamPrompt(id, text, (event) => run.apply(event));
    say("Run ended.");
  } catch (error) {
    failed(error);
  } finally {
    state.running = false;
    run.setLive(false);
    $("stop").disabled = true;
    refreshSessions().catch(failed);
  }
  const next = state.queue.shift();
  $("queued").textContent = state.queue.length ? `${state.queue.length} queued` : "";
  if (next !== undefined && state.current === id) await runPrompt(next);
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = $("prompt-input");
  const text = input.value.trim();
  if (!text || !state.current) return;
  input.value = "";
  if (state.running) {
    state.queue.push(text);
    $("queued").textContent = `${state.queue.length} queued`;
    return;
  }
  runPrompt(text);
});

$("prompt-input").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
});

$("stop").addEventListener("click", () => {
  state.queue = [];
  $("queued").textContent = "";
  api.cancel(state.current).catch(failed);
});

// ---- tabs -----------------------------------------------------------------------

const TABS = ["run", "audit", "catalog", "state"];
const currentTab = () => TABS.find((name) => $(`tab-${name}`).getAttribute("aria-selected") === "true");

async function showTab(name) {
  for (const tab of TABS) {
    const selected = tab === name;
    $(`tab-${tab}`).setAttribute("aria-selected", String(selected));
    $(`tab-${tab}`).tabIndex = selected ? 0 : -1;
    $(`panel-${tab}`).hidden = !selected;
  }
  try {
    if (name === "audit") await loadAudit();
    if (name === "catalog") await loadCatalog();
    if (name === "state") await loadState();
  } catch (error) {
    failed(error);
  }
}

for (const [index, name] of TABS.entries()) {
  const tab = $(`tab-${name}`);
  tab.addEventListener("click", () => showTab(name));
  tab.addEventListener("keydown", (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    const next = TABS[(index + step + TABS.length) % TABS.length];
    $(`tab-${next}`).focus();
    showTab(next);
  });
}

// ---- audit ------------------------------------------------------------------------

const millis = (micros) => (micros / 1000).toFixed(1);

async function loadAudit() {
  const filter = $("audit-filter");
  const tool = filter.value;
  const [{ calls, latency }, all] = await Promise.all([
    api.audit(state.current, tool),
    tool ? api.audit(state.current) : null,
  ]);
  const names = [...new Set((all ?? { calls }).calls.map((call) => call.tool))].sort();
  filter.replaceChildren(
    el("option", { value: "", text: "all tools" }),
    ...names.map((name) => el("option", { value: name, text: name })),
  );
  filter.value = tool;
  $("latency").replaceChildren(latencyChart(latency));
  $("timeline").replaceChildren(timelineChart(calls));
  $("audit-rows").replaceChildren(
    ...calls.map((call) =>
      el(
        "tr",
        { "data-testid": "audit-row", "data-tool": call.tool },
        el("td", { text: new Date(call.time).toLocaleTimeString() }),
        el("td", { text: call.tool }),
        el("td", { text: call.server ?? "—" }),
        el("td", { text: call.decision ?? "—" }),
        el("td", { text: call.by ?? "—" }),
        el("td", { class: "num", text: millis(call.queued_micros) }),
        el("td", { class: "num", text: millis(call.took_micros) }),
        el("td", {}, el("span", { class: call.is_error ? "clip error" : "clip", title: call.result, text: call.result })),
      ),
    ),
  );
  if (calls.length === 0) {
    $("audit-rows").append(el("tr", {}, el("td", { colspan: "8", class: "muted", text: "No recorded call." })));
  }
}

$("audit-filter").addEventListener("change", () => loadAudit().catch(failed));

// ---- catalog ------------------------------------------------------------------------

async function loadCatalog() {
  const [{ tools, skipped }, { commands }] = await Promise.all([
    api.tools(state.current, $("catalog-mode").value),
    api.commands(state.current),
  ]);
  $("tools").replaceChildren(
    ...tools.map((tool) =>
      el(
        "tr",
        {},
        el("td", {}, el("code", { text: tool.name })),
        el("td", { text: tool.family }),
        el("td", { text: tool.read_only ? "yes" : "no" }),
        el("td", {}, el("span", { class: "clip", title: tool.description, text: tool.description.split("\n")[0] })),
      ),
    ),
  );
  $("skipped").replaceChildren(
    ...skipped.map((tool) =>
      el(
        "li",
        { "data-testid": "skipped-tool", "data-tool": tool.name },
        el("code", { text: tool.name }),
        ` (${tool.family}): `,
        el("span", { class: "muted", text: tool.reason }),
      ),
    ),
  );
  if (skipped.length === 0) $("skipped").append(el("li", { class: "muted", text: "None: every tool kept its name." }));
  $("commands").replaceChildren(
    ...commands.map((command) =>
      el("li", {}, el("code", { text: `/${command.name}` }), " ", el("span", { class: "muted", text: command.description ?? "" })),
    ),
  );
  if (commands.length === 0) $("commands").append(el("li", { class: "muted", text: "No skill or command." }));
}

$("catalog-mode").addEventListener("change", () => loadCatalog().catch(failed));

// ---- state ------------------------------------------------------------------------------

async function loadState() {
  const [memory, mcp, store] = await Promise.all([api.memory(), api.mcp(), api.store().catch((e) => ({ ok: false, error: e.message }))]);
  const facts = $("memory");
  facts.replaceChildren();
  if (memory.scopes.length === 0) facts.append(el("p", { class: "muted", text: "Memory is off." }));
  for (const scope of memory.scopes) {
    const list = el("ul", { class: "plain", "aria-label": `${scope.scope} memory` });
    for (const fact of scope.facts) {
      const forget = el("button", { type: "button", class: "danger", "aria-label": `Forget ${fact.key}` }, "Forget");
      forget.addEventListener("click", async () => {
        try {
          await api.forget(scope.scope, fact.key, fact.version);
          say(`Forgot ${fact.key}.`);
          await loadState();
        } catch (error) {
          failed(error);
        }
      });
      list.append(
        el(
          "li",
          { class: "fact", "data-testid": "memory-item", "data-key": fact.key },
          el("span", {}, el("code", { text: fact.key }), " ", el("span", { class: "muted", text: fact.description })),
          el("span", { class: "muted", text: `v${fact.version}` }),
          forget,
        ),
      );
    }
    if (scope.facts.length === 0) list.append(el("li", { class: "muted", text: "No fact." }));
    facts.append(el("h4", { text: `${scope.scope} (${scope.place})` }), list);
  }
  const servers = $("mcp");
  servers.replaceChildren();
  if (mcp.servers.length === 0) servers.append(el("p", { class: "muted", text: "No MCP server is configured." }));
  for (const server of mcp.servers) {
    const ok = server.status === "connected";
    servers.append(
      el(
        "div",
        { class: "card", "data-server": server.name },
        el("h4", {}, el("span", { text: server.name }), el("span", { class: `badge ${ok ? "ok" : "error"}`, text: server.status })),
        el("p", { class: "muted", text: `${server.transport} · ${server.source} · ${server.tools} tools, ${server.resources} resources, ${server.prompts} prompts` }),
        server.error ? el("p", { class: "error", text: server.error }) : null,
        server.login_needed ? el("p", { text: `Log in with: mecated mcp login ${server.name}` }) : null,
      ),
    );
  }
  $("store").replaceChildren(
    el(
      "p",
      {},
      el("span", { class: `badge ${store.ok ? "ok" : "error"}`, text: store.ok ? "healthy" : "failing" }),
      " ",
      store.kind ? `${store.kind} at ${store.place}; ${store.sessions ?? "?"} sessions; probe ${millis(store.probe_micros ?? 0)} ms` : "",
      store.error ? el("span", { class: "error", text: ` ${store.error}` }) : null,
    ),
  );
}

// ---- start ---------------------------------------------------------------------------------

async function start() {
  try {
    await refreshSessions();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      showLogin();
      return;
    }
    say(error.message, true);
    return;
  }
  $("app").hidden = false;
  state.models = await api.models().catch(() => state.models);
  fillModels();
  const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
  if (wanted && state.sessions.some((session) => session.session_id === wanted)) await openSession(wanted);
}

start();
