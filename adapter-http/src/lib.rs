//! The HTTP + SSE API of `mecated serve` (axum): sessions, prompts streamed as
//! server-sent events, permission answers, cancellation, tool and command listings.
//!
//! [`HttpServer::bind`] takes the process's host ([`engine_core::host::SessionHost`]) and a socket
//! address; [`HttpServer::serve`] answers requests until its shutdown future
//! resolves, then drains (no new session or prompt, running turns finish within a
//! bound), stops accepting, cancels the runs left, closes every session engine it
//! opened and returns — closing the host stays the caller's.
//!
//! | request | engine call |
//! |---|---|
//! | `GET /healthz` | none (alive) |
//! | `GET /readyz` | `SessionStore::probe`, `SessionHost::global_servers`, the drain |
//! | `POST /v1/sessions` | `SessionHost::open` + `Engine::create_session` |
//! | `GET /v1/sessions[/{id}]` | `SessionStore::list` / `load` (+ `Engine::is_running`) |
//! | `DELETE /v1/sessions/{id}` | `Engine::cancel`, `HostedSession::close`, `SessionStore::delete` |
//! | `POST /v1/sessions/{id}/prompt` | `Engine::run` (the command chain, then the loop) |
//! | `POST /v1/sessions/{id}/approve` | `Engine::approve` |
//! | `POST /v1/sessions/{id}/cancel` | `Engine::cancel` |
//! | `GET /v1/sessions/{id}/tools` | `HostedSession::tools` |
//! | `GET /v1/sessions/{id}/commands` | `CommandExpander::list` |
//! | `PATCH /v1/sessions/{id}` | `Engine::set_mode` / `set_model` |
//! | `GET /v1/sessions/{id}/events`, `…/audit` | `SessionHost::event_log`, `tool_call_log` |
//! | `GET /v1/models`, `/v1/memory`, `/v1/mcp`, `/v1/store` | the host port's listings and probe |
//! | `DELETE /v1/memory/{scope}/{key}` | `MemoryStore::forget` |
//! | `GET /`, `/assets/…`; `POST /login`, `/logout` | the page (Mecatl Studio) and its login cookie |
//! | `GET /metrics` | the [`MetricsText`] renderer the root hands in (Prometheus text) |
//!
//! Invariants: every request passes one guard before routing — `Host` must name a
//! loopback host or an allowed one unless a token is set (DNS rebinding), an
//! `Origin` must be allowed (cross-site pages), then the token, then a body must be
//! `application/json` of at most 1 MiB; a non-loopback address needs a bearer token
//! (checked in constant time on every `/v1` request); connections are capped and get
//! a deadline for their headers and bodies a deadline of their own (408), and
//! `/healthz` still answers, on a few reserved connections, while every ordinary
//! connection is held; client-provided MCP servers are streamable HTTP only
//! and only on a loopback listener; a client leaving an SSE stream cancels its run.

mod body;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod guard;
mod handlers;
mod inspect;
mod metrics;
mod server;
mod sessions;
mod sse;
mod studio;

pub use http_guard::{AllowedHost, AllowedOrigin, AuthToken};
pub use metrics::{METRICS_CONTENT_TYPE, MetricsText};
pub use server::{HttpOptions, HttpServer, OpenConnections, ServeError};
pub use studio::{CONTENT_SECURITY_POLICY, asset_bytes};

/// The largest request body accepted (1 MiB); a larger one is answered 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// How often an idle SSE stream carries a keep-alive comment.
pub const KEEP_ALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(15);

/// How long a connection may take to send a request's headers before it is closed.
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How many connections the server holds open at once; more go to the health
/// connections, then are closed on accept.
pub const MAX_CONNECTIONS: usize = 256;

/// How long a request's body may take to arrive once its handler reads it; a slower
/// one is answered 408 and its connection closed.
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How many connections over [`MAX_CONNECTIONS`] are still served, for `GET /healthz`
/// and `GET /readyz` only (any other request is answered 503), one request each: a
/// monitor gets its answer while slow clients hold every ordinary slot.
pub const HEALTH_CONNECTIONS: usize = 16;

/// How long `GET /readyz` waits for the store's probe before it reports the store
/// not ready (under the 3 s a probe of the Kubernetes example allows).
pub const READY_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long running turns may go on once shutdown begins, by default (`--drain-secs`).
pub const DRAIN: std::time::Duration = std::time::Duration::from_secs(30);

/// How many sessions are live at once, by default (`--max-live-sessions`).
pub const MAX_LIVE_SESSIONS: usize = 64;

/// How long a session may go unused before it is unloaded, by default
/// (`--idle-unload-secs`).
pub const IDLE_UNLOAD: std::time::Duration = std::time::Duration::from_secs(600);
