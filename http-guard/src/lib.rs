//! The one guard of Mecatl's HTTP faces (the HTTP API and page of `mecated serve`,
//! the MCP server of `mecated mcp serve --http-addr`): who may reach them and what
//! a request must look like before it is routed, on the request's method, target
//! and headers only, so each face applies it in its own HTTP stack.
//!
//! A loopback listener is reachable by every web page the user opens: a page cannot
//! read a cross-origin answer, but it can send "simple" requests (`text/plain`
//! bodies, no preflight), and a DNS-rebinding page can even read answers, because
//! its own host name now resolves to 127.0.0.1. The browser still names the page's
//! host in `Host` and its origin in `Origin`, so [`Guard::admit`] admits a request
//! only when `Host` names a loopback host (or one the operator allowed with
//! `--allowed-host`; any host once a bearer token protects the face), when it
//! carries no `Origin`, the server's own (`http://<Host>`) or an allowed one
//! (`--allowed-origin`), when it proves the token if one is set, and when any body
//! it has is declared `application/json` within the face's cap.
//!
//! A face with a page ([`Face::login`]) also accepts the page's `HttpOnly;
//! SameSite=Strict` login cookie in place of the bearer token, but only from the
//! page itself: a cookie request naming another origin is refused, and a
//! state-changing one (not `GET`/`HEAD`) must name the page's origin (CSRF).
//! Allowed origins get CORS: their preflight `OPTIONS` is admitted without the token
//! (the real request still needs it) and answered with [`Guard::preflight_headers`];
//! their answers carry [`Guard::add_cors`]; other origins' preflights are refused.
//! [`AuthToken`] keeps only the token's digest and compares in constant time.
//!
//! A leaf crate (no workspace dependency), so faces share the rule without
//! depending on one another.

mod guard;
mod names;
mod token;

pub use guard::{Admission, Face, Guard, Refusal};
pub use names::{AllowedHost, AllowedOrigin, quoted};
pub use token::{AuthToken, LOGIN_COOKIE, logout_cookie};
