//! Exit codes and flag errors of `mecated`: every flag error names
//! the flag, the offending value and what is expected, and exits 2.

use crate::support::{Output, Scratch, mecated};

const SUBCOMMANDS: &str = "tools, run, chat, acp, serve, healthcheck, skills, memory, demo, policy, mcp";

async fn run_in(scratch: &Scratch, args: &[&str]) -> Output {
    mecated(scratch.dir.path(), args, &[]).await
}

fn assert_usage_error(output: &Output, needles: &[&str]) {
    assert_eq!(output.code, 2, "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    for needle in needles {
        assert!(
            output.stderr.contains(needle),
            "missing {needle:?} in:\n{}",
            output.stderr
        );
    }
}

#[tokio::test]
async fn bare_and_misplaced_flags_print_the_usage() {
    let scratch = Scratch::new();
    let bare = run_in(&scratch, &[]).await;
    assert_usage_error(&bare, &["Usage: mecated <COMMAND>", "tools", "run", "demo"]);
    let flags_first = run_in(&scratch, &["--workspace", "x"]).await;
    assert_eq!(
        flags_first.stderr,
        format!(
            "error: a subcommand comes first ({SUBCOMMANDS}), then its flags\n\nUsage: mecated <COMMAND>\n\nFor more information, try '--help'.\n"
        )
    );
    assert_usage_error(&flags_first, &[]);
}

#[tokio::test]
async fn an_unknown_subcommand_is_named_with_the_list() {
    let scratch = Scratch::new();
    let output = run_in(&scratch, &["frobnicate"]).await;
    assert_eq!(
        output.stderr,
        format!(
            "error: unknown subcommand 'frobnicate' for 'mecated'; expected one of: {SUBCOMMANDS}\n\nUsage: mecated <COMMAND>\n\nFor more information, try '--help'.\n"
        )
    );
    assert_usage_error(&output, &[]);
    let nested = run_in(&scratch, &["skills", "frob"]).await;
    assert_usage_error(&nested, &["'frob'", "mecated skills", "list, promote"]);
}

#[tokio::test]
async fn help_and_version_go_to_stdout_with_status_0() {
    let scratch = Scratch::new();
    for args in [
        &["--help"][..],
        &["-h"],
        &["run", "--help"],
        &["tools", "-h"],
        &["skills", "promote", "--help"],
        &["demo", "--help"],
    ] {
        let output = run_in(&scratch, args).await;
        assert_eq!(output.code, 0, "{args:?}: {output:?}");
        assert!(output.stdout.contains("Usage: mecated"), "{args:?}: {output:?}");
        assert!(output.stderr.is_empty(), "{args:?}: {output:?}");
    }
    let version = run_in(&scratch, &["--version"]).await;
    assert_eq!((version.code, version.stdout.as_str()), (0, "mecated 0.0.0\n"));
    let help = run_in(&scratch, &["--help"]).await;
    assert!(
        !help.stdout.contains("conformance"),
        "the mcp subcommand is hidden"
    );
    let insecure = run_in(&scratch, &["tools", "--help"]).await.stdout.to_lowercase();
    assert!(insecure.contains("cleartext") && insecure.contains("network"));
}

#[tokio::test]
async fn value_errors_name_the_flag_the_value_and_the_expected_form() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let mode = run_in(&scratch, &["tools", "--workspace", &ws, "--mode", "sideways"]).await;
    assert_eq!(
        mode.stderr,
        "error: invalid value 'sideways' for '--mode <MODE>'\n  [possible values: default, plan, acceptEdits]\n\nFor more information, try '--help'.\n"
    );
    assert_usage_error(&mode, &[]);

    let cases: &[(&[&str], &[&str])] = &[
        (
            &["run", "--mock", "--approve", "some", "x"],
            &["--approve", "'some'", "all, read-only, none"],
        ),
        (
            &["run", "--mock", "--output", "xml", "x"],
            &["--output", "'xml'", "text, jsonl"],
        ),
        (
            &["run", "--mock", "--max-turns", "0", "x"],
            &["--max-turns", "'0'", "at least 1"],
        ),
        (
            &["run", "--mock", "--context-window", "999", "x"],
            &["--context-window", "'999'", "from 1000 to 100000000"],
        ),
        (
            &["serve", "--mock", "--context-window", "big"],
            &["--context-window", "'big'", "number of tokens"],
        ),
        (
            &["tools", "--toolhive=maybe"],
            &["--toolhive", "'maybe'", "true, false"],
        ),
        (
            &["tools", "--progressive-tools=lazy"],
            &["--progressive-tools", "'lazy'", "off, light, deferred"],
        ),
        (
            &["tools", "--mcp-prompts=yes"],
            &["--mcp-prompts", "'yes'", "true, false"],
        ),
        (
            &["tools", "--mcp-resource-tools=2"],
            &["--mcp-resource-tools", "'2'", "true, false"],
        ),
        (
            &["tools", "--store-sync", "sometimes"],
            &["--store-sync", "'sometimes'", "always, batched, never"],
        ),
        (
            &["tools", "--output-cap", "lots"],
            &["--output-cap", "'lots'", "number of bytes"],
        ),
        (
            &["run", "--provider", "openai", "x"],
            &["--provider", "'openai'", "openai-chat, anthropic"],
        ),
        (
            &["tools", "--workspace", "/definitely/not/here"],
            &[
                "--workspace",
                "/definitely/not/here",
                "expected an existing directory",
            ],
        ),
        (
            &["tools", "--mcp-server", "noequals"],
            &["--mcp-server", "noequals", "NAME=URL"],
        ),
        (
            &["tools", "--mcp-server", "my-svc=https://x"],
            &["--mcp-server", "my-svc", "[A-Za-z0-9_]+"],
        ),
        (
            &[
                "tools",
                "--mcp-server",
                "vmcp=https://a.example/mcp",
                "--mcp-server",
                "VMCP=https://b.example/mcp",
            ],
            &["--mcp-server", "VMCP", "MCP_VMCP_TOKEN"],
        ),
        (
            &["tools", "--mcp-server", "a__b=https://x.example/mcp"],
            &["--mcp-server", "a__b", "__"],
        ),
        (
            &["tools", "--mcp-stdio", "fs=mcp-fs \"open"],
            &["--mcp-stdio", "fs=mcp-fs \\\"open", "quotes"],
        ),
        (
            &["tools", "--mcp-server-insecure-http", "ghost"],
            &["--mcp-server-insecure-http", "ghost", "--mcp-server"],
        ),
        (
            &["tools", "--shell", "/bin/bash", "--no-shell"],
            &["--shell", "--no-shell", "cannot be used with"],
        ),
    ];
    for (args, needles) in cases {
        let mut all = args.to_vec();
        if !args.contains(&"--workspace") {
            all.extend(["--workspace", ws.as_str()]);
        }
        let output = run_in(&scratch, &all).await;
        assert_usage_error(&output, needles);
    }
}

#[tokio::test]
async fn store_dir_and_model_rules() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let file = scratch.write("plain-file", "x").display().to_string();
    let store = run_in(&scratch, &["tools", "--workspace", &ws, "--store-dir", &file]).await;
    assert_usage_error(&store, &["--store-dir", &file, "not a directory"]);

    let none = run_in(&scratch, &["run", "--workspace", &ws, "hi"]).await;
    assert_usage_error(&none, &["--mock", "--mock-script", "--provider"]);
    let two = run_in(
        &scratch,
        &[
            "run",
            "--workspace",
            &ws,
            "--mock",
            "--provider",
            "anthropic",
            "hi",
        ],
    )
    .await;
    assert_usage_error(&two, &["--mock", "--provider anthropic", "exactly one"]);
    let base = run_in(
        &scratch,
        &[
            "run",
            "--workspace",
            &ws,
            "--mock",
            "--base-url",
            "http://x.example",
            "hi",
        ],
    )
    .await;
    assert_usage_error(&base, &["--base-url", "http://x.example", "--provider"]);
    let model = run_in(
        &scratch,
        &["run", "--workspace", &ws, "--mock", "--model", "big", "hi"],
    )
    .await;
    assert_usage_error(&model, &["--model", "'big'", "--provider"]);
}

#[tokio::test]
async fn a_provider_without_its_key_names_the_variable() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let anthropic = run_in(
        &scratch,
        &["run", "--workspace", &ws, "--provider", "anthropic", "hi"],
    )
    .await;
    assert_usage_error(&anthropic, &["ANTHROPIC_API_KEY", "--provider anthropic"]);
    let openai = run_in(
        &scratch,
        &["run", "--workspace", &ws, "--provider", "openai-chat", "hi"],
    )
    .await;
    assert_usage_error(&openai, &["OPENAI_API_KEY"]);
}

#[tokio::test]
async fn mock_script_errors_name_the_file_and_the_turn() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let cases = [
        (
            r#"{"turns":[{"text":"hi","colour":"red"}]}"#,
            "unknown.json",
            Some("turn 1"),
        ),
        (r#"{"turns":[{"text":"ok"},{}]}"#, "empty.json", Some("turn 2")),
        (
            r#"{"turns":[{"text":"slow","delay_ms":30001}]}"#,
            "delay.json",
            Some("turn 1"),
        ),
        (r#"{"turns":[], "extra": 1}"#, "top.json", None),
        (
            r#"{"turns":[{"text":"ok"}],"children":[{"match":"x","turns":[{"text":"a","colour":"red"}]}]}"#,
            "child.json",
            Some("children[0], turn 1"),
        ),
    ];
    for (json, name, turn) in cases {
        let path = scratch.write(name, json).display().to_string();
        let output = run_in(
            &scratch,
            &["run", "--workspace", &ws, "--mock-script", &path, "hi"],
        )
        .await;
        let mut needles = vec!["--mock-script", path.as_str()];
        needles.extend(turn);
        assert_usage_error(&output, &needles);
    }
    let missing = scratch.path("nope.json").display().to_string();
    let output = run_in(
        &scratch,
        &["run", "--workspace", &ws, "--mock-script", &missing, "hi"],
    )
    .await;
    assert_usage_error(&output, &["--mock-script", &missing]);
}
