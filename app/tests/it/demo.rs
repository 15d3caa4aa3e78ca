//! `mecated demo`: offline, under 5 s, a transcript of every call and
//! result, and audit files that hold one line per executed call.

use std::path::PathBuf;
use std::time::Duration;

use crate::support::{Scratch, json_lines, mecated};

/// The paths the demo printed after `label`.
fn printed(stdout: &str, label: &str) -> PathBuf {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{stdout}"));
    PathBuf::from(line.trim_start()[label.len()..].trim())
}

#[tokio::test]
async fn the_demo_runs_offline_and_leaves_its_audit_files() {
    let scratch = Scratch::new();
    let ws = scratch.path("demo-ws");
    let store = scratch.path("demo-store");
    let output = mecated(
        scratch.dir.path(),
        &[
            "demo",
            "--workspace",
            &ws.display().to_string(),
            "--store-dir",
            &store.display().to_string(),
        ],
        &[("OPENAI_API_KEY", ""), ("ANTHROPIC_API_KEY", "")],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    assert!(
        output.elapsed < Duration::from_secs(5),
        "took {:?}",
        output.elapsed
    );
    let out = &output.stdout;

    let shell = std::path::Path::new("/bin/sh").exists();
    let mut calls = vec!["Read", "Glob", "Grep", "Read", "Edit"];
    if shell {
        calls.push("Shell");
    }
    let shown: Vec<&str> = out
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("→ "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(shown, calls, "{out}");
    let results: Vec<&str> = out
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("← "))
        .collect();
    assert_eq!(results.len(), calls.len(), "{out}");
    assert!(
        results.iter().any(|r| r.starts_with("Read error")),
        "the missing file: {out}"
    );
    assert!(out.contains("file not found"), "{out}");
    assert!(out.contains("approved automatically (allow_once)"), "{out}");
    assert!(out.contains("stop: end_turn"), "{out}");
    assert!(out.contains("assistant: Done."), "{out}");

    assert_eq!(printed(out, "workspace:"), ws.canonicalize().unwrap());
    let greet = std::fs::read_to_string(ws.join("src/greet.rs")).unwrap();
    assert!(
        !greet.contains("TODO") && greet.contains("Welcome aboard"),
        "{greet}"
    );

    let tools = printed(out, "tool calls");
    let events = printed(out, "events");
    let snapshot = printed(out, "session snapshot");
    for path in [&tools, &events, &snapshot] {
        assert!(path.starts_with(&store), "{}", path.display());
        assert!(path.is_file(), "{} is missing", path.display());
    }
    let records = json_lines(&std::fs::read_to_string(&tools).unwrap());
    let recorded: Vec<&str> = records.iter().map(|r| r["tool"].as_str().unwrap()).collect();
    assert_eq!(recorded, calls);
    assert!(
        records
            .iter()
            .all(|r| r["type"] == "tool_call" && r["took_micros"].is_u64())
    );
}

#[tokio::test]
async fn the_demo_defaults_to_fresh_temporary_locations() {
    let scratch = Scratch::new();
    let output = mecated(scratch.dir.path(), &["demo"], &[]).await;
    assert_eq!(output.code, 0, "{output:?}");
    let ws = printed(&output.stdout, "workspace:");
    let tools = printed(&output.stdout, "tool calls");
    let base = ws.parent().unwrap().to_path_buf();
    assert!(
        base.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("mecated-demo-"),
        "{}",
        base.display()
    );
    assert!(tools.starts_with(base.join("store")), "{}", tools.display());
    assert!(ws.join("README.md").is_file());
    std::fs::remove_dir_all(&base).unwrap();
}
