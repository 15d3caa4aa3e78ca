//! A protected MCP server and its OAuth authorization server, on two loopback
//! origins, for the login tests: the MCP endpoint (the fixture's tools) answers 401
//! with a `resource_metadata` challenge unless the request carries a live access
//! token; the authorization server registers clients, grants every authorization
//! at once (redirecting to the client's loopback redirect with the code and state),
//! issues `at-N` / `rt-N` tokens (`expires_in` as configured) and refreshes them,
//! a refresh retiring the access token it replaces. It records what reached it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::mcp_fixture::{FixtureSpec, McpFixture};

/// What both servers saw and hold.
#[derive(Default)]
pub struct OAuthSeen {
    /// Access tokens that are valid now.
    pub live: Mutex<Vec<String>>,
    /// Refresh tokens that are valid now.
    pub refresh: Mutex<Vec<String>>,
    /// Bearer tokens the MCP endpoint received.
    pub bearers: Mutex<Vec<String>>,
    /// `Authorization` headers the authorization server received.
    pub authorization_headers: Mutex<Vec<String>>,
    /// Query strings of authorization requests.
    pub authorizations: Mutex<Vec<Value>>,
    /// Form bodies of token requests.
    pub token_requests: Mutex<Vec<Value>>,
    pub issued: AtomicUsize,
    /// When set, a request with a live token is answered `307` to this URL (a server
    /// sending the client to another origin).
    pub redirect: Mutex<Option<String>>,
}

/// The two servers; stop when dropped.
pub struct OAuthFixture {
    /// The MCP endpoint: `http://127.0.0.1:P/mcp`.
    pub url: String,
    pub seen: Arc<OAuthSeen>,
    /// What the MCP endpoint's tools saw.
    pub mcp: Arc<super::mcp_fixture::Seen>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

#[derive(Clone)]
struct AsState {
    seen: Arc<OAuthSeen>,
    issuer: String,
    expires_in: u64,
}

#[derive(Clone)]
struct RsState {
    seen: Arc<OAuthSeen>,
    metadata_url: String,
}

impl OAuthFixture {
    /// Starts both; access tokens live `expires_in` seconds as announced.
    pub async fn start(spec: FixtureSpec, expires_in: u64) -> Self {
        let seen = Arc::new(OAuthSeen::default());
        let as_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://127.0.0.1:{}", as_listener.local_addr().unwrap().port());
        let rs_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://127.0.0.1:{}", rs_listener.local_addr().unwrap().port());
        let url = format!("{origin}/mcp");

        let as_state = AsState {
            seen: Arc::clone(&seen),
            issuer: issuer.clone(),
            expires_in,
        };
        let authorization_server = Router::new()
            .route("/.well-known/oauth-authorization-server", get(as_metadata))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .layer(middleware::from_fn_with_state(
                as_state.clone(),
                record_as_headers,
            ))
            .with_state(as_state);

        let (mcp, mcp_seen) = McpFixture::router(spec);
        let rs_state = RsState {
            seen: Arc::clone(&seen),
            metadata_url: format!("{origin}/.well-known/oauth-protected-resource/mcp"),
        };
        let resource = url.clone();
        let authorization_servers = json!([issuer.clone()]);
        let protected = mcp
            .layer(middleware::from_fn_with_state(rs_state, require_token))
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(move || {
                    let body = json!({"resource": resource, "authorization_servers": authorization_servers});
                    async move { axum::Json(body) }
                }),
            );
        let tasks = vec![
            tokio::spawn(async move {
                let _ = axum::serve(as_listener, authorization_server).await;
            }),
            tokio::spawn(async move {
                let _ = axum::serve(rs_listener, protected).await;
            }),
        ];
        Self {
            url,
            seen,
            mcp: mcp_seen,
            tasks,
        }
    }

    /// Refresh-token grants received so far.
    pub fn refreshes(&self) -> usize {
        self.seen
            .token_requests
            .lock()
            .unwrap()
            .iter()
            .filter(|form| form["grant_type"] == "refresh_token")
            .count()
    }
}

impl Drop for OAuthFixture {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn record_as_headers(State(state): State<AsState>, request: Request, next: Next) -> Response {
    if let Some(value) = request.headers().get(header::AUTHORIZATION) {
        state
            .seen
            .authorization_headers
            .lock()
            .unwrap()
            .push(value.to_str().unwrap_or_default().to_owned());
    }
    next.run(request).await
}

async fn require_token(State(state): State<RsState>, request: Request, next: Next) -> Response {
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    if let Some(token) = &bearer {
        state.seen.bearers.lock().unwrap().push(token.clone());
        if state.seen.live.lock().unwrap().contains(token) {
            if let Some(elsewhere) = state.seen.redirect.lock().unwrap().clone() {
                return (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, elsewhere)]).into_response();
            }
            return next.run(request).await;
        }
    }
    let challenge = format!("Bearer resource_metadata=\"{}\"", state.metadata_url);
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
        axum::Json(json!({"error": "invalid_token"})),
    )
        .into_response()
}

async fn as_metadata(State(state): State<AsState>) -> axum::Json<Value> {
    let issuer = &state.issuer;
    axum::Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }))
}

async fn register(axum::Json(body): axum::Json<Value>) -> (StatusCode, axum::Json<Value>) {
    (
        StatusCode::CREATED,
        axum::Json(json!({"client_id": "client-1", "redirect_uris": body["redirect_uris"]})),
    )
}

async fn authorize(State(state): State<AsState>, Query(query): Query<Vec<(String, String)>>) -> Response {
    let map: serde_json::Map<String, Value> = query
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    state
        .seen
        .authorizations
        .lock()
        .unwrap()
        .push(Value::Object(map.clone()));
    let redirect = map["redirect_uri"].as_str().unwrap_or_default();
    let state_param = map["state"].as_str().unwrap_or_default();
    Redirect::to(&format!("{redirect}?code=code-1&state={state_param}")).into_response()
}

fn issue(state: &AsState) -> Value {
    let n = state.seen.issued.fetch_add(1, Ordering::SeqCst) + 1;
    let access = format!("at-{n}");
    let refresh = format!("rt-{n}");
    state.seen.live.lock().unwrap().push(access.clone());
    state.seen.refresh.lock().unwrap().push(refresh.clone());
    json!({"access_token": access, "token_type": "Bearer", "expires_in": state.expires_in, "refresh_token": refresh})
}

async fn token(State(state): State<AsState>, _headers: HeaderMap, body: String) -> Response {
    // A form body decodes like a query string.
    let uri: axum::http::Uri = format!("/token?{body}").parse().unwrap();
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(&uri).unwrap();
    let form: serde_json::Map<String, Value> =
        pairs.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
    state
        .seen
        .token_requests
        .lock()
        .unwrap()
        .push(Value::Object(form.clone()));
    match form.get("grant_type").and_then(Value::as_str) {
        Some("authorization_code") if form.get("code_verifier").is_some() => {
            axum::Json(issue(&state)).into_response()
        }
        Some("refresh_token") => {
            let presented = form
                .get("refresh_token")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let known = state.seen.refresh.lock().unwrap().iter().any(|r| r == presented);
            if !known {
                return (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"error": "invalid_grant"})),
                )
                    .into_response();
            }
            // The access token of the refreshed grant retires.
            let retired = format!("at-{}", presented.trim_start_matches("rt-"));
            state.seen.live.lock().unwrap().retain(|t| *t != retired);
            axum::Json(issue(&state)).into_response()
        }
        _ => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_request"})),
        )
            .into_response(),
    }
}
