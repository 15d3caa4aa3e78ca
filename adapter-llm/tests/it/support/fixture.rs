//! A loopback HTTP server that serves canned replies in order and records requests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// One piece of a reply body.
#[derive(Clone, Debug)]
pub(crate) enum Piece {
    /// Bytes, sent as one HTTP chunk.
    Data(Vec<u8>),
    /// Close the connection without finishing the chunked body (a dropped connection).
    Cut,
    /// Keep the connection open and send nothing more.
    Hang,
}

/// One canned reply.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    /// `None`: read the request and never answer.
    pub(crate) status: Option<u16>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<Piece>,
}

impl Reply {
    /// A 200 `text/event-stream` reply made of SSE pieces, properly ended.
    pub(crate) fn sse<S: AsRef<str>>(events: impl IntoIterator<Item = S>) -> Self {
        Self::sse_pieces(
            events
                .into_iter()
                .map(|e| Piece::Data(e.as_ref().as_bytes().to_vec())),
        )
    }

    /// A 200 `text/event-stream` reply of raw pieces.
    pub(crate) fn sse_pieces(pieces: impl IntoIterator<Item = Piece>) -> Self {
        Self {
            status: Some(200),
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: pieces.into_iter().collect(),
        }
    }

    /// A JSON reply with `status`.
    pub(crate) fn json(status: u16, body: &Value) -> Self {
        Self {
            status: Some(status),
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![Piece::Data(body.to_string().into_bytes())],
        }
    }

    /// A reply with `status` and `content_type` whose body is `body` byte for byte,
    /// one HTTP chunk per piece.
    pub(crate) fn raw<S: AsRef<str>>(
        status: u16,
        content_type: &str,
        pieces: impl IntoIterator<Item = S>,
    ) -> Self {
        Self {
            status: Some(status),
            headers: vec![("content-type".into(), content_type.into())],
            body: pieces
                .into_iter()
                .map(|p| Piece::Data(p.as_ref().as_bytes().to_vec()))
                .collect(),
        }
    }

    /// A reply that never comes.
    pub(crate) fn silent() -> Self {
        Self {
            status: None,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// The same reply with one more header.
    pub(crate) fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// `data: <json>\n\n`.
pub(crate) fn data(json: &Value) -> String {
    format!("data: {json}\n\n")
}

/// `event: <type>\ndata: <json>\n\n` (Anthropic style).
pub(crate) fn event(json: &Value) -> String {
    let kind = json["type"].as_str().unwrap_or_default();
    format!("event: {kind}\ndata: {json}\n\n")
}

/// A request the server received.
#[derive(Clone, Debug)]
pub(crate) struct Recorded {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

impl Recorded {
    /// A header value (name compared case-insensitively).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The running server; it stops with the test's runtime.
pub(crate) struct FixtureServer {
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl FixtureServer {
    /// Serves `replies` in order (one per request); later requests get a 599 saying so.
    pub(crate) async fn start(replies: Vec<Reply>) -> Self {
        Self::start_now(replies)
    }

    /// [`FixtureServer::start`] from synchronous code running inside a tokio runtime.
    pub(crate) fn start_now(replies: Vec<Reply>) -> Self {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let port = std_listener.local_addr().unwrap().port();
        let listener = TcpListener::from_std(std_listener).unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(replies);
        let next = Arc::new(AtomicUsize::new(0));
        let recorded = Arc::clone(&requests);
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let replies = Arc::clone(&replies);
                let next = Arc::clone(&next);
                let recorded = Arc::clone(&recorded);
                tokio::spawn(async move {
                    serve(socket, &replies, &next, &recorded).await;
                });
            }
        });
        Self { port, requests }
    }

    /// `http://127.0.0.1:<port>`.
    pub(crate) fn root(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    replies: &[Reply],
    next: &AtomicUsize,
    recorded: &Mutex<Vec<Recorded>>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
    let index = next.fetch_add(1, Ordering::SeqCst);
    let reply = replies.get(index).cloned().unwrap_or_else(|| {
        Reply::json(
            599,
            &serde_json::json!({"error": {"message": format!("fixture has no reply {index}")}}),
        )
    });
    let Some(status) = reply.status else {
        std::future::pending::<()>().await;
        return;
    };
    let mut head =
        format!("HTTP/1.1 {status} Fixture\r\nconnection: close\r\ntransfer-encoding: chunked\r\n");
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    for piece in &reply.body {
        match piece {
            Piece::Data(bytes) => {
                let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
                chunk.extend_from_slice(bytes);
                chunk.extend_from_slice(b"\r\n");
                if socket.write_all(&chunk).await.is_err() {
                    return;
                }
                let _ = socket.flush().await;
            }
            Piece::Cut => {
                // A clean FIN in the middle of the chunked body: the client reads
                // everything sent so far, then a body error.
                let _ = socket.shutdown().await;
                return;
            }
            Piece::Hang => {
                std::future::pending::<()>().await;
            }
        }
    }
    let _ = socket.write_all(b"0\r\n\r\n").await;
    let _ = socket.shutdown().await;
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let mut byte = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        let n = socket.read(&mut byte).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&byte[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut byte).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&byte[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}
