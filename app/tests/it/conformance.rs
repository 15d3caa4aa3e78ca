//! The product's MCP client under the official conformance suite
//! (`@modelcontextprotocol/conformance` 0.1.16 on the pinned Node 22), through
//! `mecated mcp conformance-client`.

/// One suite run at a time: `sse-retry` measures its reconnect delay, and the
/// scenarios' servers share the machine's two cores with the build.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs `scenario` of the suite against `mecated mcp conformance-client`; a failure
/// names the scenario and shows the suite's checks.
async fn passes(test: &str, scenario: &str) {
    let Some(node) = test_peers::node(test) else {
        return;
    };
    let Some(suite) = test_peers::npm_file(test, "@modelcontextprotocol/conformance/dist/index.js") else {
        return;
    };
    let mecated = env!("CARGO_BIN_EXE_mecated");
    assert!(
        !mecated.contains(' '),
        "the suite splits --command on spaces: {mecated}"
    );
    let _turn = ONE_AT_A_TIME.lock().await;
    // The elicitation scenario's server sends its question on the standalone GET
    // stream and, keeping no event store, drops it when the client has not opened
    // that stream yet (it opens right after `initialize`, concurrently): one retry
    // covers that race of the suite's server; a client that never answers fails both.
    let attempts = if scenario == "elicitation-sep1034-client-defaults" {
        2
    } else {
        1
    };
    for attempt in 1..=attempts {
        if run_once(&node, &suite, mecated, scenario, attempt == attempts).await {
            return;
        }
    }
}

/// One run of the suite; whether it passed (a failure panics when `last`).
async fn run_once(
    node: &std::path::Path,
    suite: &std::path::Path,
    mecated: &str,
    scenario: &str,
    last: bool,
) -> bool {
    let out = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(node)
        .arg(suite)
        .arg("client")
        .arg("--command")
        .arg(format!("{mecated} mcp conformance-client"))
        .arg("--scenario")
        .arg(scenario)
        .arg("-o")
        .arg(out.path())
        .env_remove("MECATED_LOG")
        .env_remove("XDG_STATE_HOME")
        .env_remove("BROWSER")
        .env("HOME", home.path())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    // The suite exits non-zero for any failed check, any warning, or a client that
    // failed where the scenario does not expect it to.
    if !output.status.success() && !last {
        return false;
    }
    if !output.status.success() {
        let checks: Vec<String> = walk(out.path())
            .into_iter()
            .filter(|path| path.ends_with("checks.json"))
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .collect();
        panic!(
            "conformance scenario {scenario} failed ({}):\nstdout:\n{}\nstderr:\n{}\nchecks.json:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            checks.join("\n")
        );
    }
    true
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// One test per scenario of the suite the client supports, named after it.
macro_rules! scenarios {
    ($($test:ident => $scenario:literal,)*) => {
        $(
            #[tokio::test]
            async fn $test() {
                passes(stringify!($test), $scenario).await;
            }
        )*

        #[test]
        fn every_supported_scenario_has_its_test() {
            let tested = [$($scenario),*];
            assert_eq!(tested.as_slice(), adapter_mcp::CONFORMANCE_SCENARIOS.as_slice());
        }
    };
}

scenarios! {
    conformance_initialize => "initialize",
    conformance_tools_call => "tools_call",
    conformance_sse_retry => "sse-retry",
    conformance_elicitation_sep1034_client_defaults => "elicitation-sep1034-client-defaults",
    conformance_auth_metadata_default => "auth/metadata-default",
    conformance_auth_metadata_var1 => "auth/metadata-var1",
    conformance_auth_metadata_var2 => "auth/metadata-var2",
    conformance_auth_metadata_var3 => "auth/metadata-var3",
    conformance_auth_basic_cimd => "auth/basic-cimd",
    conformance_auth_scope_from_www_authenticate => "auth/scope-from-www-authenticate",
    conformance_auth_scope_from_scopes_supported => "auth/scope-from-scopes-supported",
    conformance_auth_scope_omitted_when_undefined => "auth/scope-omitted-when-undefined",
    conformance_auth_scope_step_up => "auth/scope-step-up",
    conformance_auth_scope_retry_limit => "auth/scope-retry-limit",
    conformance_auth_token_endpoint_auth_basic => "auth/token-endpoint-auth-basic",
    conformance_auth_token_endpoint_auth_post => "auth/token-endpoint-auth-post",
    conformance_auth_token_endpoint_auth_none => "auth/token-endpoint-auth-none",
    conformance_auth_pre_registration => "auth/pre-registration",
    conformance_auth_2025_03_26_oauth_metadata_backcompat => "auth/2025-03-26-oauth-metadata-backcompat",
    conformance_auth_2025_03_26_oauth_endpoint_fallback => "auth/2025-03-26-oauth-endpoint-fallback",
    conformance_auth_resource_mismatch => "auth/resource-mismatch",
    conformance_auth_offline_access_scope => "auth/offline-access-scope",
    conformance_auth_offline_access_not_supported => "auth/offline-access-not-supported",
    conformance_auth_client_credentials_basic => "auth/client-credentials-basic",
}

#[tokio::test]
async fn an_unsupported_scenario_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let output = crate::support::mecated(
        home.path(),
        &["mcp", "conformance-client", "http://127.0.0.1:1/"],
        &[("MCP_CONFORMANCE_SCENARIO", "auth/no-such-scenario")],
    )
    .await;
    assert_eq!(output.code, 2, "{output:?}");
    assert!(
        output.stderr.contains("auth/no-such-scenario"),
        "{}",
        output.stderr
    );
    let missing = crate::support::mecated(
        home.path(),
        &["mcp", "conformance-client", "http://127.0.0.1:1/"],
        &[],
    )
    .await;
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(
        missing.stderr.contains("MCP_CONFORMANCE_SCENARIO"),
        "{}",
        missing.stderr
    );
}
