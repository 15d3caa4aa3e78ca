//! Mecatl Studio, the page of `mecated serve`: its assets, embedded in the binary and
//! served at `/` and `/assets/…` with a strict `Content-Security-Policy`, and the
//! login that trades the token for the page's cookie once (`POST /login`).
//!
//! The page is a face on the HTTP API and holds no logic of its own: every list,
//! count and percentile it shows comes from an endpoint under `/v1`. Its scripts are
//! plain ES modules (no build step), so what is served is what is in `studio/`.

use std::sync::{Arc, OnceLock};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use http_guard::logout_cookie;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::body::{JsonBody, invalid};
use super::error::ApiError;
use super::server::ServerState;

/// The policy of every page answer: scripts, styles, images and requests from this
/// origin only; no inline script or style, no plugins, no framing, no `<base>`.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// One embedded file of the page.
struct Asset {
    /// Its path under `/assets/` (`index.html` is served at `/`).
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

/// Every file of the page.
const ASSETS: &[Asset] = &[
    Asset {
        name: "index.html",
        content_type: "text/html; charset=utf-8",
        bytes: include_bytes!("../studio/index.html"),
    },
    Asset {
        name: "studio.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../studio/studio.css"),
    },
    Asset {
        name: "favicon.svg",
        content_type: "image/svg+xml",
        bytes: include_bytes!("../studio/favicon.svg"),
    },
    Asset {
        name: "js/main.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../studio/js/main.js"),
    },
    Asset {
        name: "js/api.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../studio/js/api.js"),
    },
    Asset {
        name: "js/run.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../studio/js/run.js"),
    },
    Asset {
        name: "js/charts.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../studio/js/charts.js"),
    },
];

/// The total size of the page's embedded files, in bytes.
pub fn asset_bytes() -> usize {
    ASSETS.iter().map(|asset| asset.bytes.len()).sum()
}

/// The strong `ETag` of each asset (a SHA-256 prefix of its bytes), computed once.
fn etags() -> &'static [String] {
    static ETAGS: OnceLock<Vec<String>> = OnceLock::new();
    ETAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|asset| {
                let digest = Sha256::digest(asset.bytes);
                let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    })
}

/// `GET /`: the page.
pub(crate) async fn index(headers: HeaderMap) -> Response {
    serve_asset("index.html", &headers)
}

/// `GET /favicon.ico`: the icon (an SVG; browsers ask for this path by themselves).
pub(crate) async fn favicon(headers: HeaderMap) -> Response {
    serve_asset("favicon.svg", &headers)
}

/// `GET /assets/{*file}`: one file of the page, 404 for any other name.
pub(crate) async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    serve_asset(&file, &headers)
}

/// The asset `name` with its type, the page's security headers, `Cache-Control:
/// no-cache` and its `ETag` (304 when the browser holds it already).
fn serve_asset(name: &str, headers: &HeaderMap) -> Response {
    let Some(index) = ASSETS.iter().position(|asset| asset.name == name) else {
        return ApiError::not_found(format!("no page asset {name:?}")).into_response();
    };
    let asset = &ASSETS[index];
    let etag = &etags()[index];
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.split(',').any(|tag| tag.trim() == etag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type))],
            asset.bytes,
        )
            .into_response()
    };
    let out = response.headers_mut();
    out.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    out.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    out.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    out.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(etag) {
        out.insert(header::ETAG, value);
    }
    response
}

/// `POST /login {token}` → 204 with the login cookie when `token` is the server's
/// token; 401 otherwise; 400 when the server has no token (nothing to log in to).
pub(crate) async fn login(State(state): State<Arc<ServerState>>, JsonBody(body): JsonBody) -> Response {
    let Some(expected) = state.policy.auth_token() else {
        return ApiError::bad_request("this server has no auth token: the API is open, nothing to log in to")
            .into_response();
    };
    let map = body.unwrap_or_default();
    let presented = match map.get("token") {
        Some(Value::String(token)) => token.as_str(),
        None | Some(Value::Null) => {
            return ApiError::bad_request(
                "missing field \"token\": send {\"token\": \"<the server's token>\"}",
            )
            .into_response();
        }
        Some(other) => {
            return invalid("token", other, "expected the server's token (a string)").into_response();
        }
    };
    if !expected.matches(presented) {
        tracing::info!("a page login with a wrong token was refused");
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "wrong token: send the token mecated serve was started with (--auth-token or MECATED_AUTH_TOKEN)",
        )
        .into_response();
    }
    set_cookie(StatusCode::NO_CONTENT, &expected.login_cookie())
}

/// `POST /logout` → 204, the login cookie expired.
pub(crate) async fn logout() -> Response {
    set_cookie(StatusCode::NO_CONTENT, &logout_cookie())
}

fn set_cookie(status: StatusCode, cookie: &str) -> Response {
    let mut response = status.into_response();
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
