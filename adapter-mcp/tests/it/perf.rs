//! Performance target: connecting 16 slow servers concurrently takes about as
//! long as the slowest single connect.

use std::time::{Duration, Instant};

use adapter_mcp::{ConnectOptions, McpManager};

use crate::support::fake::FakeState;
use crate::support::http::FixtureServer;
use crate::support::http_config;

const DELAY: Duration = Duration::from_millis(250);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_slow_servers_connect_in_about_one_connect_time() {
    let mut servers = Vec::new();
    for _ in 0..16 {
        let server = FixtureServer::start(FakeState::new()).await;
        *server.faults.post_delay.lock().unwrap() = Some(DELAY);
        servers.push(server);
    }
    // Single connects, one at a time (a sample of four; the sum is extrapolated).
    let mut singles = Vec::new();
    for server in servers.iter().take(4) {
        let started = Instant::now();
        let connected =
            McpManager::connect(vec![http_config("one", &server.url())], ConnectOptions::default()).await;
        singles.push(started.elapsed());
        assert!(connected.failures.is_empty(), "{:?}", connected.failures);
        connected.manager.close().await.unwrap();
    }
    let slowest = singles.iter().max().copied().unwrap();
    let mean = singles.iter().sum::<Duration>() / u32::try_from(singles.len()).unwrap();
    let sum = mean * 16;

    let configs = servers
        .iter()
        .enumerate()
        .map(|(i, s)| http_config(&format!("s{i}"), &s.url()))
        .collect();
    let started = Instant::now();
    let connected = McpManager::connect(configs, ConnectOptions::default()).await;
    let wall = started.elapsed();
    assert!(connected.failures.is_empty(), "{:?}", connected.failures);
    assert_eq!(connected.manager.server_names().len(), 16);
    eprintln!("16 concurrent connects: {wall:?}; slowest single {slowest:?}; sum ≈ {sum:?}");
    assert!(
        wall < slowest * 2,
        "{wall:?} is not under 2× the slowest single connect {slowest:?}"
    );
    assert!(
        wall < sum / 4,
        "{wall:?} is not under a quarter of the sum {sum:?}"
    );
    connected.manager.close().await.unwrap();
}
