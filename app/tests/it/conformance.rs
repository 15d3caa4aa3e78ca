//! The product's MCP client under the official conformance suite
//! (`@modelcontextprotocol/conformance` 0.1.16 on the pinned Node 22), through
//! `mecated mcp conformance-client`.

const TEST: &str = "conformance_client_passes_initialize_tools_call_and_sse_retry";

#[tokio::test]
async fn conformance_client_passes_initialize_tools_call_and_sse_retry() {
    let Some(node) = test_peers::node(TEST) else {
        return;
    };
    let Some(suite) = test_peers::npm_file(TEST, "@modelcontextprotocol/conformance/dist/index.js") else {
        return;
    };
    let mecated = env!("CARGO_BIN_EXE_mecated");
    assert!(
        !mecated.contains(' '),
        "the suite splits --command on spaces: {mecated}"
    );
    let out = tempfile::tempdir().unwrap();
    // One scenario at a time: sse-retry measures its reconnect delay.
    for scenario in ["initialize", "tools_call", "sse-retry"] {
        let output = tokio::process::Command::new(&node)
            .arg(&suite)
            .arg("client")
            .arg("--command")
            .arg(format!("{mecated} mcp conformance-client"))
            .arg("--scenario")
            .arg(scenario)
            .arg("-o")
            .arg(out.path())
            .env_remove("MECATED_LOG")
            .kill_on_drop(true)
            .output()
            .await
            .unwrap();
        if !output.status.success() {
            let checks: Vec<String> = std::fs::read_dir(out.path())
                .unwrap()
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with(scenario))
                .filter_map(|e| std::fs::read_to_string(e.path().join("checks.json")).ok())
                .collect();
            panic!(
                "scenario {scenario} failed ({}):\nstdout:\n{}\nstderr:\n{}\nchecks.json:\n{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
                checks.join("\n")
            );
        }
    }
}

#[tokio::test]
async fn an_unsupported_scenario_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let output = crate::support::mecated(
        home.path(),
        &["mcp", "conformance-client", "http://127.0.0.1:1/"],
        &[("MCP_CONFORMANCE_SCENARIO", "auth/basic")],
    )
    .await;
    assert_eq!(output.code, 2, "{output:?}");
    assert!(output.stderr.contains("auth/basic"), "{}", output.stderr);
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
