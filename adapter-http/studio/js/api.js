// The HTTP API of `mecated serve`, as the page uses it: JSON requests (same origin,
// the login cookie sent by the browser) and the prompt's server-sent events read
// off a streamed POST answer.

/** An error answer of the API: its status and the server's message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function request(method, path, body) {
  const init = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { error: text };
  }
  if (!response.ok) throw new ApiError(response.status, data?.error ?? response.statusText);
  return data;
}

const session = (id) => `/v1/sessions/${encodeURIComponent(id)}`;

export const api = {
  login: (token) => request("POST", "/login", { token }),
  sessions: () => request("GET", "/v1/sessions"),
  create: (body) => request("POST", "/v1/sessions", body ?? {}),
  show: (id) => request("GET", session(id)),
  update: (id, body) => request("PATCH", session(id), body),
  remove: (id) => request("DELETE", session(id)),
  events: (id) => request("GET", `${session(id)}/events`),
  audit: (id, tool) => request("GET", `${session(id)}/audit${tool ? `?tool=${encodeURIComponent(tool)}` : ""}`),
  approve: (id, askId, verdict) => request("POST", `${session(id)}/approve`, { ask_id: askId, verdict }),
  elicit: (id, body) => request("POST", `${session(id)}/elicit`, body),
  cancel: (id) => request("POST", `${session(id)}/cancel`),
  cancelChild: (id, childId) => request("POST", `${session(id)}/cancel-child`, { child_id: childId }),
  tools: (id, mode) => request("GET", `${session(id)}/tools?mode=${encodeURIComponent(mode)}`),
  commands: (id) => request("GET", `${session(id)}/commands`),
  models: () => request("GET", "/v1/models"),
  memory: () => request("GET", "/v1/memory"),
  forget: (scope, key, version) =>
    request("DELETE", `/v1/memory/${encodeURIComponent(scope)}/${encodeURIComponent(key)}?version=${version}`),
  mcp: () => request("GET", "/v1/mcp"),
  store: () => request("GET", "/v1/store"),
};

/**
 * Starts a prompt and calls `onEvent` with each event of the run as it arrives;
 * resolves when the stream ends (after `result`).
 */
export async function streamPrompt(id, text, onEvent) {
  const response = await fetch(`${session(id)}/prompt`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ text }),
  });
  if (!response.ok) {
    let message = response.statusText;
    try {
      message = (await response.json()).error ?? message;
    } catch {
      // Not JSON: keep the status text.
    }
    throw new ApiError(response.status, message);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}
