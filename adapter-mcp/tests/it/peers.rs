//! Real third-party peers: server-everything over streamable HTTP (tools, hints,
//! content kinds, resources, prompts, pagination), server-filesystem, mcp-server-time
//! and mcp-server-git over stdio, and the Python SDK's bearer-token server.

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use adapter_mcp::{McpFlags, McpManager, MountOptions, ServerConfig, parse_mcp_flags, prompt_expander};
use engine_core::{Catalog, OutputCap, ToolError};
use engine_ports::{
    CancellationToken, CommandExpander as _, ContentPart, Expansion, PermissionMode, ToolCall,
};
use serde_json::Value;

use crate::support::{catalog_of, connect_all, environment, http_config, run, run_with};

fn read_only_names(catalog: &Catalog) -> Vec<String> {
    catalog
        .available_names(PermissionMode::Plan)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn everything_over_streamable_http() {
    let Some(peer) = test_peers::everything_http("everything_http", test_peers::EVERYTHING) else {
        return;
    };
    let manager = connect_all(vec![http_config("ev", &format!("{}/mcp", peer.base_url()))]).await;
    // server-everything registers more tools after `initialized` and says so.
    let tools = manager.tools(MountOptions::default()).await;
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    for expected in [
        "mcp__ev__echo",
        "mcp__ev__get-tiny-image",
        "mcp__ev__toggle-simulated-logging",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let catalog = catalog_of(&manager).await;
    let plan = read_only_names(&catalog);
    assert!(plan.contains(&"mcp__ev__echo".to_owned()), "{plan:?}");
    assert!(plan.contains(&"mcp__ev__get-sum".to_owned()), "{plan:?}");
    assert!(
        !plan.contains(&"mcp__ev__toggle-simulated-logging".to_owned()),
        "{plan:?}"
    );
    assert!(
        !plan.contains(&"mcp__ev__gzip-file-as-resource".to_owned()),
        "{plan:?}"
    );

    let echo = run(&catalog, "mcp__ev__echo", r#"{"message":"hi there"}"#).await;
    assert!(
        !echo.is_error() && echo.content().contains("hi there"),
        "{echo:?}"
    );
    // Validation failures come back as error results, not transport failures.
    let invalid = run(&catalog, "mcp__ev__echo", "{}").await;
    assert!(invalid.is_error(), "{invalid:?}");
    assert!(!invalid.content().contains("unavailable"), "{invalid:?}");

    let image = run(&catalog, "mcp__ev__get-tiny-image", "{}").await;
    assert!(
        image.parts().iter().any(
            |p| matches!(p, ContentPart::Image { mime, data } if mime == "image/png" && !data.is_empty())
        ),
        "{image:?}"
    );
    assert!(!image.content().contains("iVBOR"), "{}", image.content());
    let links = run(&catalog, "mcp__ev__get-resource-links", r#"{"count":2}"#).await;
    assert!(
        links
            .parts()
            .iter()
            .any(|p| matches!(p, ContentPart::ResourceLink(_))),
        "{links:?}"
    );
    let structured = run(
        &catalog,
        "mcp__ev__get-structured-content",
        r#"{"location":"New York"}"#,
    )
    .await;
    assert!(
        structured
            .parts()
            .iter()
            .any(|p| matches!(p, ContentPart::Structured { .. })),
        "{structured:?}"
    );

    let resources = manager.list_resources(Some("ev")).await.unwrap();
    assert_eq!(resources.len(), 7, "{resources:?}");
    assert!(
        resources
            .iter()
            .all(|r| r.uri.starts_with("demo://resource/static/document/"))
    );
    let cancel = CancellationToken::new();
    let chunks = manager
        .read_resource("ev", &resources[0].uri, &cancel)
        .await
        .unwrap();
    assert!(!chunks.is_empty());

    let (expander, _) = prompt_expander(true, Some(&manager), OutputCap::default());
    let Expansion::Expanded(text) = expander
        .unwrap()
        .expand("/mcp__ev__args-prompt city=Paris")
        .await
        .unwrap()
    else {
        panic!("args-prompt did not expand")
    };
    assert_eq!(text, "user: What's weather in Paris?");
    manager.close().await.unwrap();
}

#[tokio::test]
async fn everything_2025_pages_its_resources() {
    let Some(peer) = test_peers::everything_http("everything_2025", test_peers::EVERYTHING_2025) else {
        return;
    };
    let manager = connect_all(vec![http_config("old", &format!("{}/mcp", peer.base_url()))]).await;
    assert_eq!(manager.servers()[0].resources, 100);
    let catalog = catalog_of(&manager).await;
    assert!(
        read_only_names(&catalog).is_empty(),
        "tools without annotations are never read-only"
    );
    manager.close().await.unwrap();
}

#[tokio::test]
async fn filesystem_over_stdio_answers_each_call() {
    let (Some(node), Some(entry)) = (
        test_peers::node("filesystem"),
        test_peers::npm_file(
            "filesystem",
            "@modelcontextprotocol/server-filesystem/dist/index.js",
        ),
    ) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("alpha.txt"), "alpha contents").unwrap();
    let root_path = root.path().canonicalize().unwrap();
    let config = ServerConfig::stdio(
        "fs",
        node.display().to_string(),
        vec![entry.display().to_string(), root_path.display().to_string()],
        &root_path,
    )
    .with_connect_timeout(Duration::from_secs(20));
    let manager = connect_all(vec![config]).await;
    let catalog = catalog_of(&manager).await;
    assert_eq!(manager.servers()[0].tools, 14);
    let plan = read_only_names(&catalog);
    assert!(plan.contains(&"mcp__fs__read_text_file".to_owned()));
    assert!(!plan.contains(&"mcp__fs__write_file".to_owned()));

    // Two read-only calls in one batch: each result belongs to its own call.
    let permitted = format!(r#"{{"path":"{}"}}"#, root_path.join("alpha.txt").display());
    let (env, _dir) = environment();
    let tool = catalog.lookup("mcp__fs__read_text_file").unwrap();
    let cancel = CancellationToken::new();
    let first = ToolCall::new("first", "mcp__fs__read_text_file", permitted);
    let second = ToolCall::new("second", "mcp__fs__read_text_file", r#"{"path":"/etc/hostname"}"#);
    let (allowed, denied) = tokio::join!(
        tool.execute(&cancel, &first, &env),
        tool.execute(&cancel, &second, &env)
    );
    let (allowed, denied) = (allowed.unwrap(), denied.unwrap());
    assert_eq!(allowed.call_id().as_str(), "first");
    assert!(
        !allowed.is_error() && allowed.content().contains("alpha contents"),
        "{allowed:?}"
    );
    assert_eq!(denied.call_id().as_str(), "second");
    assert!(
        denied.is_error() && denied.content().contains("Access denied"),
        "{denied:?}"
    );
    manager.close().await.unwrap();
}

#[tokio::test]
async fn time_and_git_over_stdio() {
    let (Some(time), Some(git)) = (
        test_peers::venv_bin("time_git", "mcp-server-time"),
        test_peers::venv_bin("time_git", "mcp-server-git"),
    ) else {
        return;
    };
    let repo = tempfile::tempdir().unwrap();
    let git_env = [
        ("GIT_AUTHOR_NAME", "Tester"),
        ("GIT_AUTHOR_EMAIL", "t@example.test"),
        ("GIT_COMMITTER_NAME", "Tester"),
        ("GIT_COMMITTER_EMAIL", "t@example.test"),
    ];
    for args in [
        &["init", "-q"][..],
        &["add", "."][..],
        &["commit", "-q", "-m", "first commit"][..],
    ] {
        if args[0] == "add" {
            std::fs::write(repo.path().join("file.txt"), "x").unwrap();
        }
        let status = Command::new("git")
            .args(args)
            .current_dir(repo.path())
            .envs(git_env)
            .status()
            .unwrap();
        assert!(status.success());
    }
    let workspace = repo.path().to_owned();
    let flags = McpFlags {
        stdio: vec![
            format!(
                "time={} --local-timezone UTC",
                shell_words::quote(&time.display().to_string())
            ),
            format!(
                "git={} -r {}",
                shell_words::quote(&git.display().to_string()),
                shell_words::quote(&workspace.display().to_string())
            ),
        ],
        workspace: workspace.clone(),
        ..McpFlags::default()
    };
    let configs = parse_mcp_flags(&flags, |_| None).unwrap();
    let configs = configs
        .into_iter()
        .map(|c| c.with_connect_timeout(Duration::from_secs(60)))
        .collect();
    let manager = connect_all(configs).await;
    let catalog = catalog_of(&manager).await;
    let plan = read_only_names(&catalog);
    for read_only in [
        "mcp__time__get_current_time",
        "mcp__time__convert_time",
        "mcp__git__git_status",
        "mcp__git__git_log",
    ] {
        assert!(plan.contains(&read_only.to_owned()), "{read_only}: {plan:?}");
    }
    for mutating in ["mcp__git__git_commit", "mcp__git__git_reset", "mcp__git__git_add"] {
        assert!(
            catalog.lookup(mutating).is_some() && !plan.contains(&mutating.to_owned()),
            "{mutating}"
        );
    }
    let now = run(
        &catalog,
        "mcp__time__get_current_time",
        r#"{"timezone":"Europe/Paris"}"#,
    )
    .await;
    assert!(!now.is_error(), "{now:?}");
    let text = now.parts().iter().find_map(|p| match p {
        ContentPart::Text { text } => Some(text.clone()),
        _ => None,
    });
    let shape: Value = serde_json::from_str(&text.unwrap()).unwrap();
    for key in ["timezone", "datetime", "day_of_week", "is_dst"] {
        assert!(shape.get(key).is_some(), "{key}: {shape}");
    }
    assert_eq!(shape["timezone"], "Europe/Paris");
    let log = run(
        &catalog,
        "mcp__git__git_log",
        &serde_json::json!({"repo_path": workspace.display().to_string()}).to_string(),
    )
    .await;
    assert!(
        !log.is_error() && log.content().contains("first commit"),
        "{log:?}"
    );
    manager.close().await.unwrap();
}

#[tokio::test]
async fn bearer_tokens_reach_the_python_sdk_server() {
    const TOKEN: &str = "peer-token-1234";
    let Some(peer) = test_peers::bearer_server("bearer", TOKEN) else {
        return;
    };
    let url = format!("{}/mcp", peer.base_url());

    // Without the token the connect fails, naming the server and never a header value.
    let connected = McpManager::connect(
        vec![http_config("bearer", &url)],
        adapter_mcp::ConnectOptions::default(),
    )
    .await;
    assert_eq!(connected.failures.len(), 1);
    assert_eq!(connected.failures[0].server, "bearer");

    let wrong = parse_mcp_flags(
        &McpFlags {
            servers: vec![format!("bearer={url}")],
            ..McpFlags::default()
        },
        |name| (name == "MCP_BEARER_TOKEN").then(|| "wrong-token-5678".to_owned()),
    )
    .unwrap();
    let connected = McpManager::connect(wrong, adapter_mcp::ConnectOptions::default()).await;
    assert_eq!(connected.failures.len(), 1);
    assert!(
        !connected.failures[0].error.contains("wrong-token-5678"),
        "{:?}",
        connected.failures
    );

    let env: HashMap<&str, &str> = HashMap::from([("MCP_BEARER_TOKEN", TOKEN)]);
    let configs = parse_mcp_flags(
        &McpFlags {
            servers: vec![format!("bearer={url}")],
            ..McpFlags::default()
        },
        |name| env.get(name).map(|v| (*v).to_owned()),
    )
    .unwrap();
    let manager = connect_all(configs).await;
    let catalog = catalog_of(&manager).await;
    assert_eq!(read_only_names(&catalog), ["mcp__bearer__add"]);
    assert!(!catalog.lookup("mcp__bearer__slow").unwrap().read_only());
    let sum = run(&catalog, "mcp__bearer__add", r#"{"a":2,"b":3}"#).await;
    assert!(sum.content().contains('5'), "{sum:?}");

    // Cancelling during slow(5) returns promptly; the next call works.
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let started = Instant::now();
    let (env, _dir) = environment();
    let slow = catalog.lookup("mcp__bearer__slow").unwrap();
    let call = ToolCall::new("slow-1", "mcp__bearer__slow", r#"{"seconds":5}"#);
    let (outcome, ()) = tokio::join!(slow.execute(&cancel, &call, &env), async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        canceller.cancel();
    });
    assert!(matches!(outcome, Err(ToolError::Cancelled)), "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let again = run_with(
        &catalog,
        "mcp__bearer__add",
        r#"{"a":1,"b":1}"#,
        &CancellationToken::new(),
    )
    .await;
    assert!(again.content().contains('2'), "{again:?}");
    manager.close().await.unwrap();
}
