//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16,
//! on the pinned Node 22) against our client (`examples/conformance_client.rs`) for
//! the `initialize`, `tools_call` and `sse-retry` scenarios.

use std::path::{Path, PathBuf};
use std::process::Command;

const SCENARIOS: [&str; 3] = ["initialize", "tools_call", "sse-retry"];

/// The example binary next to this test binary (`cargo test` builds examples); built
/// on demand when missing (e.g. `cargo test --test it`).
fn conformance_client() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let example = profile_dir.join("examples").join("conformance_client");
    if !example.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "adapter-mcp", "--example", "conformance_client"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "building the conformance client failed");
    }
    assert!(example.exists(), "{} is missing", example.display());
    example
}

fn checks_json(dir: &Path) -> String {
    let mut out = String::new();
    for entry in walk(dir) {
        if entry
            .file_name()
            .is_some_and(|n| n == "checks.json" || n == "stderr.txt" || n == "stdout.txt")
        {
            out.push_str(&format!(
                "--- {}\n{}\n",
                entry.display(),
                std::fs::read_to_string(&entry).unwrap_or_default()
            ));
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn conformance_suite_scenarios_pass() {
    let (Some(node), Some(cli)) = (
        test_peers::node("conformance"),
        test_peers::npm_file("conformance", "@modelcontextprotocol/conformance/dist/index.js"),
    ) else {
        return;
    };
    let client = conformance_client();
    let command = client.display().to_string();
    assert!(
        !command.contains(' '),
        "the suite splits --command on spaces: {command}"
    );
    // One at a time: `sse-retry` checks the reconnect timing (500 ms ± tolerance),
    // which a busy machine running three suites at once could skew.
    let runs: Vec<_> = SCENARIOS
        .iter()
        .map(|scenario| {
            let output_dir = tempfile::tempdir().unwrap();
            let output = Command::new(&node)
                .arg(&cli)
                .args(["client", "--command", &command, "--scenario", scenario, "-o"])
                .arg(output_dir.path())
                .output();
            (scenario, output_dir, output)
        })
        .collect();
    let mut failures = Vec::new();
    for (scenario, output_dir, output) in runs {
        let output = output.unwrap();
        if !output.status.success() {
            failures.push(format!(
                "scenario {scenario} failed ({}):\n{}\n{}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
                checks_json(output_dir.path())
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn unsupported_scenarios_exit_2() {
    let client = conformance_client();
    let output = Command::new(client)
        .arg("http://127.0.0.1:1/mcp")
        .env("MCP_CONFORMANCE_SCENARIO", "auth/basic")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not supported"));
}
