//! A loopback TCP proxy in front of the database that can be frozen: bytes stop
//! flowing both ways (as over a dead network path) until it is thawed.

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The proxy; it stops with the test's runtime.
pub(crate) struct Proxy {
    pub(crate) port: u16,
    frozen: watch::Sender<bool>,
}

impl Proxy {
    /// Forwards a free loopback port to `127.0.0.1:upstream`.
    pub(crate) async fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (frozen, watching) = watch::channel(false);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, watching.clone()));
                tokio::spawn(pump(server_read, client_write, watching.clone()));
            }
        });
        Self { port, frozen }
    }

    /// Stops every byte in flight, both ways.
    pub(crate) fn freeze(&self) {
        self.frozen.send_replace(true);
    }

    /// Lets bytes flow again.
    pub(crate) fn thaw(&self) {
        self.frozen.send_replace(false);
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut frozen: watch::Receiver<bool>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        while *frozen.borrow_and_update() {
            if frozen.changed().await.is_err() {
                return;
            }
        }
        let n = tokio::select! {
            read = from.read(&mut buffer) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            _ = frozen.changed() => continue,
        };
        while *frozen.borrow_and_update() {
            if frozen.changed().await.is_err() {
                return;
            }
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}
