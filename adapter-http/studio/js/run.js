// A run's transcript: the events of a session (replayed from the store or live off
// the prompt's stream) rendered as messages, tool cards, approvals, elicitation
// forms, delegation trees and notices. It decides nothing: buttons call the API.

/** Creates an element with attributes and children (strings become text). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== undefined && child !== null) node.append(child);
  }
  return node;
}

const pretty = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));

function millis(from, to) {
  const start = Date.parse(from);
  const end = Date.parse(to);
  return Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, end - start) : null;
}

export class RunView {
  /**
   * @param {HTMLElement} transcript where messages and cards go
   * @param {HTMLElement} events the list of every event
   * @param {{approve: Function, elicit: Function, cancelChild: Function}} actions
   */
  constructor(transcript, events, actions) {
    this.transcript = transcript;
    this.eventList = events;
    this.actions = actions;
    this.reset();
  }

  reset() {
    this.transcript.replaceChildren();
    this.eventList.replaceChildren();
    this.cards = new Map();
    this.asks = new Map();
    this.children = new Map();
    this.roots = new Map();
    this.assistant = null;
    this.reasoning = null;
    this.live = false;
  }

  /** Marks whether buttons may act (a run is streaming here). */
  setLive(live) {
    this.live = live;
    for (const button of this.transcript.querySelectorAll("button[data-live]")) {
      button.disabled = !live;
    }
  }

  user(text) {
    this.transcript.append(el("div", { class: "bubble user", text }));
    this.assistant = null;
  }

  notice(text, error = false) {
    this.transcript.append(el("p", { class: error ? "notice error" : "notice", text }));
  }

  liveButton(label, attrs, onclick) {
    return el("button", { type: "button", "data-live": true, disabled: !this.live, onclick, ...attrs }, label);
  }

  /** Renders one event. */
  apply(event) {
    this.eventList.append(el("li", { "data-testid": "event", text: `#${event.seq} ${event.type}` }));
    const handler = HANDLERS[event.type];
    if (handler) handler.call(this, event);
    // Follow a live run: its newest part stays in view.
    if (this.live) this.transcript.lastElementChild?.scrollIntoView({ block: "nearest" });
  }

  card(callId) {
    return this.cards.get(callId);
  }

  assistantBubble() {
    if (!this.assistant) {
      this.assistant = el("div", { class: "bubble assistant", "data-testid": "message-assistant" });
      this.transcript.append(this.assistant);
    }
    return this.assistant;
  }

  setStatus(card, word, kind) {
    card.status.textContent = word;
    card.status.className = `badge ${kind}`;
    card.root.dataset.status = kind;
  }

  /** The delegation tree of a card: one list item per child. */
  child(event, label) {
    let child = this.children.get(event.child_id);
    if (child) return child;
    const card = this.card(event.call_id);
    const host = card ? card.root : this.transcript;
    let tree = host.querySelector(":scope > .tree");
    if (!tree) {
      tree = el("ul", { class: "tree", "aria-label": "Delegation" });
      host.append(tree);
    }
    const state = el("span", { class: "badge running", text: "running" });
    const steps = el("ul", { class: "steps" });
    const cancel = this.liveButton(
      "Cancel",
      { class: "danger", "aria-label": `Cancel ${label}` },
      () => this.actions.cancelChild(event.child_id),
    );
    const item = el(
      "li",
      { "data-child": event.child_id },
      el("div", { class: "child-head" }, el("strong", { text: label }), state, cancel),
      steps,
    );
    tree.append(item);
    child = { item, state, steps, cancel };
    this.children.set(event.child_id, child);
    return child;
  }

  childStep(child, text) {
    child.steps.append(el("li", { text }));
  }

  childEnd(child, stop, preview) {
    child.state.textContent = stop;
    child.state.className = `badge ${stop === "end_turn" || stop === "converged" ? "ok" : "error"}`;
    child.cancel.remove();
    if (preview) this.childStep(child, preview);
  }
}

const HANDLERS = {
  "session.init"(e) {
    this.notice(`Run started on ${e.model} in ${e.mode} mode with ${e.tools.length} tools.`);
  },
  "turn.start"() {
    this.assistant = null;
    this.reasoning = null;
  },
  "message.delta"(e) {
    this.assistantBubble().append(e.text);
  },
  "reasoning.delta"(e) {
    if (!this.reasoning) {
      this.reasoning = el("div", { class: "bubble reasoning" });
      this.transcript.append(this.reasoning);
    }
    this.reasoning.append(e.text);
  },
  "model.retry"(e) {
    if (this.assistant) this.assistant.textContent = "";
    this.notice(`The model request is retried (attempt ${e.attempt}): ${e.error}`, true);
  },
  "context.compacted"(e) {
    this.notice(
      `The conversation was compacted: ${e.messages_replaced} messages summarised, ` +
        `about ${e.tokens_before} → ${e.tokens_after} tokens of ${e.context_window}.`,
    );
  },
  "catalog.changed"(e) {
    this.notice(`Tools changed: +${e.added.join(", ") || "none"} −${e.removed.join(", ") || "none"}`);
  },
  "tool.call"(e) {
    this.assistant = null;
    const status = el("span", { class: "badge running", text: "running" });
    const result = el("div", { class: "result" });
    const root = el(
      "article",
      { class: "card tool", "data-testid": "tool-card", "data-call": e.call_id, "data-tool": e.name },
      el("h4", {}, el("span", { text: e.name }), status, el("span", { class: "muted duration" })),
      el("details", {}, el("summary", { text: "Arguments" }), el("pre", { text: pretty(e.args) })),
      result,
    );
    this.transcript.append(root);
    this.cards.set(e.call_id, { root, status, result, started: e.time });
  },
  "permission.ask"(e) {
    const card = this.card(e.call_id);
    if (card) this.setStatus(card, "awaiting approval", "waiting");
    const answer = (verdict) => () => this.actions.approve(e.ask_id, verdict);
    const box = el(
      "div",
      { class: "card approval", "data-testid": "approval", "data-ask": e.ask_id, role: "group", "aria-label": `Approve ${e.name}` },
      el("p", {}, el("strong", { text: `${e.name} needs approval. ` }), e.reason),
      e.suggested_rule ? el("p", { class: "muted", text: `Allow always saves: ${e.suggested_rule}` }) : null,
      el(
        "div",
        { class: "actions" },
        this.liveButton("Allow once", { class: "primary", "data-testid": "approve-once" }, answer("allow_once")),
        this.liveButton("Allow always", { "data-testid": "approve-always" }, answer("allow_always")),
        this.liveButton("Deny", { class: "danger", "data-testid": "deny" }, answer("deny")),
      ),
    );
    if (card) card.root.insertBefore(box, card.result);
    else this.transcript.append(box);
    this.asks.set(e.ask_id, box);
  },
  "permission.verdict"(e) {
    const box = this.asks.get(e.ask_id);
    if (box) {
      box.querySelector(".actions")?.remove();
      const words = { allow_once: "Allowed once", allow_always: "Allowed always", deny: "Denied" };
      box.append(el("p", { class: "verdict", text: `${words[e.verdict] ?? e.verdict}${e.saved_rule ? ` (saved ${e.saved_rule})` : ""}` }));
    }
    const card = this.card(e.call_id);
    if (card && e.verdict !== "deny") this.setStatus(card, "running", "running");
  },
  "elicitation.request"(e) {
    const card = this.card(e.call_id);
    const form = el("form", { "aria-label": `Answer ${e.name}` });
    const properties = e.requested_schema?.properties ?? {};
    const required = new Set(e.requested_schema?.required ?? []);
    for (const [name, property] of Object.entries(properties)) {
      const id = `elicit-${e.elicitation_id}-${name}`;
      // An optional field may come as `anyOf: [{type}, {type: "null"}]`.
      const spec = { ...(property.anyOf?.find((option) => option.type !== "null") ?? {}), ...property };
      const label = el("label", { for: id, text: spec.title ?? name });
      let input;
      if (Array.isArray(spec.enum)) {
        input = el("select", { id, name }, spec.enum.map((value) => el("option", { value, text: value })));
      } else if (spec.type === "boolean") {
        input = el("input", { id, name, type: "checkbox" });
      } else {
        const type = spec.type === "number" || spec.type === "integer" ? "number" : "text";
        input = el("input", { id, name, type, required: required.has(name) });
      }
      input.dataset.kind = spec.type ?? "string";
      form.append(label, input);
      if (spec.description) form.append(el("span", { class: "muted", text: spec.description }));
    }
    const content = () => {
      const out = {};
      for (const input of form.querySelectorAll("input, select")) {
        const kind = input.dataset.kind;
        if (kind === "boolean") out[input.name] = input.checked;
        else if (input.value === "" && !required.has(input.name)) continue;
        else if (kind === "number") out[input.name] = Number(input.value);
        else if (kind === "integer") out[input.name] = Number.parseInt(input.value, 10);
        else out[input.name] = input.value;
      }
      return out;
    };
    form.addEventListener("submit", (submit) => {
      submit.preventDefault();
      this.actions.elicit({ elicitation_id: e.elicitation_id, action: "accept", content: content() });
    });
    const decline = () => this.actions.elicit({ elicitation_id: e.elicitation_id, action: "decline" });
    form.append(
      el(
        "div",
        { class: "actions" },
        el("button", { type: "submit", class: "primary", "data-live": true, disabled: !this.live }, "Submit"),
        this.liveButton("Decline", {}, decline),
      ),
    );
    const box = el(
      "div",
      { class: "card elicitation", "data-testid": "elicitation", "data-elicitation": e.elicitation_id },
      el("p", {}, el("strong", { text: `${e.name} asks: ` }), e.message),
      form,
    );
    if (card) card.root.insertBefore(box, card.result);
    else this.transcript.append(box);
    this.asks.set(e.elicitation_id, box);
  },
  "elicitation.result"(e) {
    const box = this.asks.get(e.elicitation_id);
    if (!box) return;
    box.querySelector("form")?.remove();
    box.append(el("p", { class: "verdict", text: `Answered: ${e.action}${e.reason ? ` (${e.reason})` : ""}` }));
  },
  hook(e) {
    const card = this.card(e.call_id);
    const text = `${e.phase} hook ${e.action}: ${e.message}`;
    if (card) card.root.append(el("p", { class: "notice", text }));
    else this.notice(text);
  },
  "hook.session"(e) {
    this.notice(`${e.event} hook ${e.action}: ${e.message}`);
  },
  "tool.result"(e) {
    const card = this.card(e.call_id);
    if (!card) return;
    const denied = card.root.querySelector(".verdict")?.textContent === "Denied";
    this.setStatus(card, denied ? "denied" : e.is_error ? "error" : "ok", denied ? "denied" : e.is_error ? "error" : "ok");
    card.result.replaceChildren(el("pre", { class: e.is_error ? "error" : "", text: e.content }));
    const took = millis(card.started, e.time);
    if (took !== null) card.root.querySelector(".duration").textContent = `${took} ms`;
  },
  "subagent.start"(e) {
    const child = this.child(e, `Subagent ${e.description}`);
    if (e.preview) this.childStep(child, e.preview);
  },
  "subagent.tool"(e) {
    this.childStep(this.child(e, "Subagent"), `${e.name} ${e.preview}`);
  },
  "subagent.end"(e) {
    this.childEnd(this.child(e, "Subagent"), e.stop, e.preview);
  },
  "parallel.start"(e) {
    const root = this.child(e, `Parallel (${e.branches} branches, join ${e.join})`);
    root.item.classList.add("parallel");
    this.roots.set(e.call_id, root);
  },
  "parallel.branch"(e) {
    const child = this.child(e, `Branch ${e.index}`);
    const tree = this.roots.get(e.call_id);
    if (tree && child.item.parentElement !== tree.steps) tree.steps.append(child.item);
    if (e.phase === "tool") this.childStep(child, `${e.name} ${e.preview}`);
    else if (e.phase === "end") this.childEnd(child, e.stop ?? "end_turn", e.preview);
    else if (e.preview) this.childStep(child, e.preview);
  },
  "parallel.end"(e) {
    this.childEnd(this.child(e, "Parallel"), e.winner === undefined ? "no winner" : `winner ${e.winner}`, e.preview);
    const root = this.children.get(e.child_id);
    root.state.className = "badge ok";
  },
  "team.start"(e) {
    this.roots.set(e.call_id, this.child(e, `Team ${e.members.join(", ")}`));
  },
  "team.member"(e) {
    const child = this.child(e, `Member ${e.member}`);
    const tree = this.roots.get(e.call_id);
    if (tree && child.item.parentElement !== tree.steps) tree.steps.append(child.item);
    if (e.phase === "tool") this.childStep(child, `${e.name} ${e.preview}`);
    else if (e.phase === "end") this.childStep(child, `round ${e.round} ended: ${e.stop ?? ""} ${e.preview}`);
    else this.childStep(child, `round ${e.round} started`);
  },
  "team.tasks"(e) {
    this.childStep(this.child(e, "Team"), `tasks: ${e.preview}`);
  },
  "team.end"(e) {
    this.childEnd(this.child(e, "Team"), e.stop, e.preview);
  },
  result(e) {
    for (const card of this.cards.values()) {
      if (card.root.dataset.status === "running" || card.root.dataset.status === "waiting") {
        this.setStatus(card, "cancelled", "error");
      }
    }
    const usage = e.usage ? ` · ${e.usage.input_tokens ?? 0} in / ${e.usage.output_tokens ?? 0} out tokens` : "";
    const text = `Run ended: ${e.stop} after ${e.turns} turns and ${e.tool_calls} tool calls${usage}.`;
    this.notice(e.error ? `${text} ${e.error}` : text, e.stop === "error");
    this.assistant = null;
  },
};
