//! `mecated healthcheck`: one `GET /healthz` (or `/readyz`) to a running `serve`
//! over plain HTTP/1.1, for a container's health check on an image without curl or
//! a shell. Exit 0 on a 200, 1 otherwise with the reason on stderr.

use std::process::ExitCode;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::cli::HealthcheckArgs;
use crate::out;

/// The most of the answer read (its status line is all that matters).
const MAX_ANSWER: u64 = 64 * 1024;

/// Asks once, within `--timeout-secs`; prints the status line on success.
pub(crate) async fn healthcheck(args: &HealthcheckArgs) -> ExitCode {
    let path = if args.ready { "/readyz" } else { "/healthz" };
    let limit = Duration::from_secs(args.timeout_secs);
    match tokio::time::timeout(limit, status_of(args.http_addr, path)).await {
        Ok(Ok(200)) => {
            out::stdout(&format!("{path}: 200"));
            ExitCode::SUCCESS
        }
        Ok(Ok(status)) => out::failure(format!("GET http://{}{path} answered {status}", args.http_addr)),
        Ok(Err(error)) => out::failure(format!("GET http://{}{path} failed: {error}", args.http_addr)),
        Err(_) => out::failure(format!(
            "GET http://{}{path} got no answer within {limit:?} (--timeout-secs)",
            args.http_addr
        )),
    }
}

/// The status code of `GET path` on `addr`.
async fn status_of(addr: std::net::SocketAddr, path: &str) -> std::io::Result<u16> {
    let mut tcp = TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    tcp.take(MAX_ANSWER).read_to_end(&mut answer).await?;
    let head = String::from_utf8_lossy(&answer);
    let status = head
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("HTTP/1.1 "))
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok());
    status.ok_or_else(|| std::io::Error::other("the answer is not HTTP/1.1"))
}
