//! The redirect receiver of a login: a one-purpose HTTP listener on 127.0.0.1 at a
//! port the kernel picks, waiting for the authorization server's redirect to
//! `/callback` with our `state` (a request with another state, or to another path, is
//! answered 400/404 and the wait goes on), within a time limit.

use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::AuthFailure;

/// The most bytes of a redirect request's head that are read.
const MAX_HEAD: usize = 8 * 1024;

/// How long one connection may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// What the redirect carried.
#[derive(Debug)]
pub(crate) struct Callback {
    pub(crate) code: String,
    pub(crate) state: String,
    pub(crate) issuer: Option<String>,
}

/// A bound redirect receiver.
pub(crate) struct Receiver {
    listener: TcpListener,
    redirect_uri: String,
}

impl Receiver {
    /// Binds 127.0.0.1 on a free port.
    pub(crate) async fn bind() -> Result<Self, AuthFailure> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.map_err(|e| {
            AuthFailure::Failed(format!("cannot listen on 127.0.0.1 for the login redirect: {e}"))
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| {
                AuthFailure::Failed(format!("cannot listen on 127.0.0.1 for the login redirect: {e}"))
            })?
            .port();
        Ok(Self {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        })
    }

    /// `http://127.0.0.1:<port>/callback`.
    pub(crate) fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits for the redirect carrying `state`, at most `limit`.
    ///
    /// # Errors
    /// [`AuthFailure::Failed`]: the time ran out, or the server answered with an
    /// error (the user declined, …).
    pub(crate) async fn wait(
        &self,
        state: &str,
        limit: Duration,
        server: &str,
    ) -> Result<Callback, AuthFailure> {
        let waiting = async {
            loop {
                let Ok((stream, _)) = self.listener.accept().await else {
                    continue;
                };
                if let Some(outcome) = answer(stream, state).await {
                    return outcome;
                }
            }
        };
        match tokio::time::timeout(limit, waiting).await {
            Ok(outcome) => outcome.map_err(|why| {
                AuthFailure::Failed(format!("MCP server {server:?}: the login failed: {why}"))
            }),
            Err(_) => Err(AuthFailure::Failed(format!(
                "MCP server {server:?}: no login arrived within {} s (the browser never came back to {}); run `mecated mcp login {server}` again",
                limit.as_secs(),
                self.redirect_uri
            ))),
        }
    }
}

/// Reads one request and answers it: `Some` when it ends the wait (the code, or the
/// server's error), `None` to keep waiting.
async fn answer(mut stream: TcpStream, state: &str) -> Option<Result<Callback, String>> {
    let head = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream))
        .await
        .ok()??;
    let target = head.lines().next()?.split(' ').nth(1)?.to_owned();
    let url = url::Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    if url.path() != "/callback" {
        respond(&mut stream, "404 Not Found", "Not found.").await;
        return None;
    }
    let get = |key: &str| {
        url.query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    if get("state").as_deref() != Some(state) {
        respond(
            &mut stream,
            "400 Bad Request",
            "This login answer does not belong to the login in progress (state mismatch); it was ignored.",
        )
        .await;
        return None;
    }
    if let Some(error) = get("error") {
        respond(
            &mut stream,
            "400 Bad Request",
            "The login was not completed. You can close this tab.",
        )
        .await;
        let description = get("error_description").map(|d| format!(": {}", crate::redact::clamp(&d)));
        return Some(Err(format!(
            "the authorization server answered {error}{}",
            description.unwrap_or_default()
        )));
    }
    let Some(code) = get("code") else {
        respond(
            &mut stream,
            "400 Bad Request",
            "The answer carries no authorization code.",
        )
        .await;
        return None;
    };
    respond(
        &mut stream,
        "200 OK",
        "Logged in. You can close this tab and return to the terminal.",
    )
    .await;
    Some(Ok(Callback {
        code,
        state: state.to_owned(),
        issuer: get("iss"),
    }))
}

async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0_u8; 1024];
    while !buffer.windows(4).any(|w| w == b"\r\n\r\n") {
        if buffer.len() >= MAX_HEAD {
            return None;
        }
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    String::from_utf8(buffer).ok()
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!("<!doctype html><meta charset=\"utf-8\"><title>Mecatl</title><p>{text}</p>\n");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(HEAD_TIMEOUT, stream.write_all(response.as_bytes())).await;
    let _ = stream.shutdown().await;
}
