//! OAuth 2.1 authorization of remote (streamable HTTP) MCP servers, as the MCP
//! authorization rules (2025-11-25) describe it, reactive: a request goes out with
//! the stored access token (renewed first when it is about to expire), and a `401`
//! or a `403 insufficient_scope` challenge is answered by renewing the login (a
//! `401` on a token we sent), else by a new authorization when this process may run
//! one, then the request is sent again — at most [`MAX_AUTHORIZATIONS`] times.
//!
//! - `discovery`: the authorization server from the challenge (protected-resource
//!   metadata, authorization-server metadata, the 2025-03-26 fallback) and PKCE S256;
//! - `registration`: pre-registered client, client metadata document, dynamic
//!   registration; token endpoint authentication; when client credentials are used;
//! - `flow`: one authorization (authorization code + PKCE through the browser or
//!   headlessly, or client credentials);
//! - `loopback`: the redirect receiver on 127.0.0.1;
//! - `refresh`: renewing a login without a person;
//! - `store`: where logins live ([`TokenStore`]);
//! - `client`: the HTTP client wrapper that attaches tokens and answers challenges.
//!
//! Tokens go only to the MCP server's own URL (redirects are followed only to the
//! same origin), never to a log: `Debug` of every type holding one redacts it.

mod client;
mod discovery;
mod flow;
mod loopback;
mod refresh;
mod registration;
mod store;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub(crate) use client::AuthorizedClient;
pub use store::{AuthStatus, TokenStore, TokenStoreError};

use discovery::Challenge;
use store::{Tokens, now_secs};

/// The most authorizations (renewals included) one request may cause before its
/// challenge is given up: a server that keeps refusing every token (a scope it never
/// grants) cannot loop the client.
pub(crate) const MAX_AUTHORIZATIONS: usize = 3;

/// How long the HTTP requests of an authorization (registration, headless fetch,
/// token requests) may take each.
const AUTH_HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// How this client identifies itself to a server's authorization server (the
/// `oauth` object of a server's config entry). Everything is optional: without a
/// client id the client registers dynamically.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OAuthClientSettings {
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret (a confidential client).
    pub client_secret: Option<String>,
    /// The HTTPS URL of this client's metadata document, used as its client id when
    /// the authorization server accepts such documents.
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for (default: those the server's challenge or metadata
    /// names).
    pub scopes: Vec<String>,
    /// Use the client-credentials grant (machine to machine) even when the
    /// authorization server also offers the authorization-code grant.
    pub client_credentials: bool,
}

impl fmt::Debug for OAuthClientSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClientSettings")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("client_credentials", &self.client_credentials)
            .finish()
    }
}

/// How a server's request for authorization is answered.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Authorizer {
    /// With a stored login only (renewed without a person when it can be): a server
    /// that needs a new login fails, naming `mecated mcp login <server>`. What runs
    /// without a person (`run`, `serve`, `acp`) uses this.
    #[default]
    Stored,
    /// A person logs in in a browser; the stored login is not used (a new login
    /// replaces it).
    Browser(BrowserLogin),
    /// The authorization URL is fetched without a person and its redirect followed
    /// to the loopback receiver: for test authorization servers that grant at once
    /// (the conformance suite's).
    Headless,
}

impl fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stored => f.write_str("Stored"),
            Self::Browser(browser) => f.debug_tuple("Browser").field(&browser.timeout).finish(),
            Self::Headless => f.write_str("Headless"),
        }
    }
}

/// A browser login: how the authorization URL reaches the person, and how long the
/// redirect may take.
#[derive(Clone)]
pub struct BrowserLogin {
    /// Shows the authorization URL to the person (opens a browser, prints it).
    pub open: Arc<dyn Fn(&str) + Send + Sync>,
    /// How long to wait for the browser to come back to the loopback redirect.
    pub timeout: Duration,
}

/// Why a request could not be authorized.
#[derive(Clone, Debug)]
pub(crate) enum AuthFailure {
    /// A new login is needed and this process may not run one.
    NeedsLogin,
    /// The authorization failed (the text names the server and the cause).
    Failed(String),
}

/// The authorization state of one server, shared by its sessions (reconnects keep
/// the login): one renewal or authorization at a time.
pub(crate) struct ServerAuth {
    server: Arc<str>,
    url: String,
    settings: OAuthClientSettings,
    store: TokenStore,
    authorizer: Authorizer,
    /// The client of the authorization's own requests, built on first use (most
    /// connects never need one).
    http: std::sync::OnceLock<reqwest::Client>,
    state: tokio::sync::Mutex<State>,
    needs_login: AtomicBool,
    authorized: AtomicBool,
}

#[derive(Default)]
struct State {
    loaded: bool,
    tokens: Option<Tokens>,
}

impl fmt::Debug for ServerAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerAuth")
            .field("server", &self.server)
            .field("settings", &self.settings)
            .field("store", &self.store)
            .field("authorizer", &self.authorizer)
            .finish_non_exhaustive()
    }
}

/// A client for the authorization's own requests: bounded, and never following a
/// redirect (a token request is not replayed elsewhere).
fn auth_http() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .timeout(AUTH_HTTP_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

impl ServerAuth {
    /// The state of `server` at `url`.
    pub(crate) fn new(
        server: Arc<str>,
        url: &str,
        settings: OAuthClientSettings,
        store: TokenStore,
        authorizer: Authorizer,
    ) -> Self {
        Self {
            server,
            url: url.to_owned(),
            settings,
            store,
            authorizer,
            http: std::sync::OnceLock::new(),
            state: tokio::sync::Mutex::new(State::default()),
            needs_login: AtomicBool::new(false),
            authorized: AtomicBool::new(false),
        }
    }

    fn http(&self) -> Result<reqwest::Client, String> {
        if let Some(client) = self.http.get() {
            return Ok(client.clone());
        }
        let client = auth_http().map_err(|e| {
            format!(
                "MCP server {:?}: cannot build the HTTP client: {e}",
                &*self.server
            )
        })?;
        Ok(self.http.get_or_init(|| client).clone())
    }

    /// Whether a request failed because a login is needed that this process may not
    /// run.
    pub(crate) fn needs_login(&self) -> bool {
        self.needs_login.load(Ordering::SeqCst)
    }

    /// Whether this process ran an authorization for the server.
    pub(crate) fn authorized(&self) -> bool {
        self.authorized.load(Ordering::SeqCst)
    }

    /// The failure text of a server that needs a login.
    pub(crate) fn login_hint(server: &str) -> String {
        format!("it needs a login: run `mecated mcp login {server}`")
    }

    fn failure_text(&self, failure: &AuthFailure) -> String {
        match failure {
            AuthFailure::NeedsLogin => format!(
                "MCP server {:?}: {}",
                &*self.server,
                Self::login_hint(&self.server)
            ),
            AuthFailure::Failed(text) => text.clone(),
        }
    }

    fn save(&self, tokens: Option<&Tokens>) {
        if let Err(error) = self.store.save(&self.url, tokens) {
            tracing::warn!(
                server = &*self.server,
                "MCP server {:?}: the login could not be stored: {error}",
                &*self.server
            );
        }
    }

    /// The access token to send, renewed first when it is about to expire; `None`
    /// when there is no login (the request goes out without one).
    pub(crate) async fn token(&self) -> Result<Option<String>, String> {
        let mut state = self.state.lock().await;
        if !state.loaded {
            state.loaded = true;
            // A browser login replaces the stored one: its token is not sent.
            if !matches!(self.authorizer, Authorizer::Browser(_)) {
                state.tokens = self.store.load(&self.url).map_err(|e| e.to_string())?;
            }
        }
        let Some(tokens) = &state.tokens else {
            return Ok(None);
        };
        if !tokens.expiring(now_secs()) {
            return Ok(Some(tokens.access_token.clone()));
        }
        if !tokens.renewable() {
            // Expired for good: sent anyway, the server's challenge decides.
            return Ok(Some(tokens.access_token.clone()));
        }
        match refresh::renew(&self.http()?, tokens).await {
            Ok(renewed) => {
                self.save(Some(&renewed));
                let token = renewed.access_token.clone();
                state.tokens = Some(renewed);
                Ok(Some(token))
            }
            Err(refresh::RenewError::Rejected(why)) => {
                tracing::warn!(
                    server = &*self.server,
                    "MCP server {:?}: the stored login was refused ({why})",
                    &*self.server
                );
                state.tokens = None;
                self.save(None);
                Ok(None)
            }
            Err(refresh::RenewError::Failed(why)) => Err(format!(
                "MCP server {:?}: renewing the login failed: {why}",
                &*self.server
            )),
        }
    }

    /// Answers a `401`/`403` challenge to a request sent with `sent`: the token
    /// another request already renewed, a renewal, or a new authorization.
    pub(crate) async fn recover(&self, header: &str, sent: Option<&str>) -> Result<String, String> {
        let challenge = Challenge::parse(header, &self.url);
        let http = self.http()?;
        let mut state = self.state.lock().await;
        if let Some(current) = &state.tokens
            && Some(current.access_token.as_str()) != sent
            && !challenge.insufficient_scope
        {
            return Ok(current.access_token.clone());
        }
        if !challenge.insufficient_scope
            && sent.is_some()
            && let Some(tokens) = &state.tokens
            && tokens.renewable()
        {
            match refresh::renew(&http, tokens).await {
                Ok(renewed) => {
                    self.save(Some(&renewed));
                    let token = renewed.access_token.clone();
                    state.tokens = Some(renewed);
                    return Ok(token);
                }
                Err(why) => {
                    tracing::info!(
                        server = &*self.server,
                        "MCP server {:?}: renewing the refused login failed ({why}); a new login is needed",
                        &*self.server
                    );
                }
            }
        }
        // A step-up asks for what was granted plus what the operation needs.
        let scopes = if challenge.insufficient_scope {
            let mut scopes = state
                .tokens
                .as_ref()
                .map(|t| t.scopes.clone())
                .unwrap_or_default();
            for scope in &challenge.scopes {
                if !scopes.contains(scope) {
                    scopes.push(scope.clone());
                }
            }
            scopes
        } else {
            Vec::new()
        };
        let request = flow::Request {
            server: &self.server,
            server_url: &self.url,
            settings: &self.settings,
            authorizer: &self.authorizer,
            http: &http,
            scopes,
        };
        let outcome = match self.authorizer {
            Authorizer::Stored => Err(AuthFailure::NeedsLogin),
            _ => flow::authorize(&request, &challenge).await,
        };
        match outcome {
            Ok(tokens) => {
                self.authorized.store(true, Ordering::SeqCst);
                self.save(Some(&tokens));
                let token = tokens.access_token.clone();
                state.tokens = Some(tokens);
                Ok(token)
            }
            Err(failure) => {
                if matches!(failure, AuthFailure::NeedsLogin) {
                    self.needs_login.store(true, Ordering::SeqCst);
                    if state.tokens.is_none() && self.store.path().is_some() {
                        // Remembered, so `mecated mcp list` shows it.
                        self.save(None);
                    }
                }
                Err(self.failure_text(&failure))
            }
        }
    }
}
