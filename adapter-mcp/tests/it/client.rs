//! Client-provided (per-session) servers — validation, D7
//! all-or-nothing, the client tier, and the per-session lifecycle.

use std::sync::atomic::Ordering;
use std::time::Duration;

use adapter_mcp::{
    ClientServerContext, ClientServerKind, ClientServerSpec, ConnectOptions, MountOptions, Redirects,
    ServerSource, TransportConfig, connect_client_servers, validate_client_servers,
};
use engine_core::Catalog;

use crate::support::fake::FakeState;
use crate::support::http::FixtureServer;
use crate::support::{catalog_of, connect_all, http_config, run, wait_until};

fn http(name: &str, url: &str) -> ClientServerSpec {
    ClientServerSpec {
        name: name.to_owned(),
        kind: ClientServerKind::Http {
            url: url.to_owned(),
            headers: Vec::new(),
        },
    }
}

fn context(stdio_allowed: bool) -> ClientServerContext {
    ClientServerContext {
        stdio_allowed,
        workspace: "/work/space".into(),
    }
}

#[test]
fn validation_reports_every_problem() {
    let long = "n".repeat(65);
    let specs = vec![
        http("", "https://x.example/mcp"),
        http(&long, "https://x.example/mcp"),
        http("a__b", "https://x.example/mcp"),
        http("a b", "https://x.example/mcp"),
        http("notes", "https://notes.example/mcp"),
        http("notes", "https://notes.example/mcp"),
        ClientServerSpec {
            name: "local".into(),
            kind: ClientServerKind::Stdio {
                command: "mcp-local".into(),
                args: vec![],
                env: vec![],
            },
        },
        ClientServerSpec {
            name: "old".into(),
            kind: ClientServerKind::Sse,
        },
        http("plain", "http://example.test/mcp"),
    ];
    let error = validate_client_servers(&specs, &context(false)).unwrap_err();
    let text = error.to_string();
    assert!(text.contains('9') && text.contains('8'), "{text}");
    for (server, needle) in [
        ("", "empty"),
        (long.as_str(), "64"),
        ("a__b", "__"),
        ("a b", "A-Za-z0-9"),
        ("notes", "twice"),
        ("local", "only streamable HTTP"),
        ("old", "SSE"),
        ("plain", "https"),
    ] {
        assert!(
            error
                .problems
                .iter()
                .any(|p| p.server.as_deref() == Some(server) && p.reason.contains(needle)),
            "{server:?} / {needle}: {text}"
        );
    }
    let configs =
        validate_client_servers(&[http("notes", "https://notes.example/mcp")], &context(false)).unwrap();
    assert_eq!(configs.len(), 1);
    assert_eq!(configs[0].connect_timeout, Duration::from_secs(10));
    assert_eq!(configs[0].source, ServerSource::Client);
    assert!(matches!(
        &configs[0].transport,
        TransportConfig::Http {
            redirects: Redirects::None,
            headers: None,
            ..
        }
    ));

    // Headers: empty names dropped, reserved and invalid ones named (never their values).
    let with_headers = ClientServerSpec {
        name: "h".into(),
        kind: ClientServerKind::Http {
            url: "https://h.example/mcp".into(),
            headers: vec![
                (String::new(), "ignored".into()),
                ("X-Api-Key".into(), "k1".into()),
                ("Mcp-Session-Id".into(), "s".into()),
                ("X-Bad".into(), "line\nbreak-secret".into()),
            ],
        },
    };
    let error = validate_client_servers(&[with_headers], &context(false))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("Mcp-Session-Id") && error.contains("X-Bad"),
        "{error}"
    );
    assert!(
        !error.contains("break-secret") && !error.contains("k1"),
        "{error}"
    );

    // Over ACP's stdio transport, stdio servers are accepted, in the workspace.
    let stdio = ClientServerSpec {
        name: "local".into(),
        kind: ClientServerKind::Stdio {
            command: "mcp-local".into(),
            args: vec!["--x".into()],
            env: vec![("K".into(), "v".into())],
        },
    };
    let configs = validate_client_servers(&[stdio], &context(true)).unwrap();
    let TransportConfig::Stdio {
        program, cwd, env, ..
    } = &configs[0].transport
    else {
        panic!()
    };
    assert_eq!(
        (program.as_str(), cwd.to_str()),
        ("mcp-local", Some("/work/space"))
    );
    assert_eq!(env, &[("K".to_owned(), "v".to_owned())]);
}

#[tokio::test]
async fn one_failure_fails_the_session_and_closes_the_rest() {
    let good = FixtureServer::start(FakeState::new()).await;
    let port = test_peers::free_port();
    let specs = vec![
        http("good", &good.url()),
        http("gone", &format!("http://127.0.0.1:{port}/mcp?token=q-secret")),
    ];
    let error = connect_client_servers(&specs, &context(false), ConnectOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.problems.len(), 1);
    assert_eq!(error.problems[0].server.as_deref(), Some("gone"));
    let text = error.to_string();
    assert!(
        text.contains(&format!("http://127.0.0.1:{port}/mcp")) && !text.contains("q-secret"),
        "{text}"
    );
    assert!(
        wait_until(Duration::from_secs(10), || good
            .faults
            .deletes
            .load(Ordering::SeqCst)
            >= 1)
        .await,
        "the connected server was not closed"
    );
    assert!(
        connect_client_servers(&[], &context(false), ConnectOptions::default())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_session_manager_closes_without_touching_the_global_one() {
    let global = FixtureServer::start(FakeState::new()).await;
    let manager = connect_all(vec![http_config("glob", &global.url())]).await;
    let shared = catalog_of(&manager).await;
    let client_server = FixtureServer::start(FakeState::new()).await;
    let client = connect_client_servers(
        &[http("mine", &client_server.url())],
        &context(false),
        ConnectOptions::default(),
    )
    .await
    .unwrap()
    .unwrap();
    let mut session: Catalog = shared.clone();
    for tool in client.tool_snapshot(MountOptions::default()).catalog_tools() {
        session.must_register(tool);
    }
    let extra: Vec<&str> = session.names().filter(|n| shared.lookup(n).is_none()).collect();
    assert_eq!(extra, ["mcp__mine__boom", "mcp__mine__echo", "mcp__mine__peek"]);
    assert!(shared.names().all(|n| session.lookup(n).is_some()));

    client.close().await.unwrap();
    assert!(client_server.faults.deletes.load(Ordering::SeqCst) >= 1);
    let closed = run(&session, "mcp__mine__echo", "{}").await;
    assert!(closed.content().contains("closed"), "{closed:?}");
    let global_call = run(&session, "mcp__glob__echo", r#"{"text":"still"}"#).await;
    assert_eq!(global_call.content(), "echo:still");
    assert!(!manager.is_closed());
}
