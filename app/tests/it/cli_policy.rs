//! Operator policy on the command line: settings files and their rules in `run`, the
//! audit's provenance, `--trust-project`, hooks, `policy check` and `tools`.

use serde_json::{Value, json};

use crate::cli_run::find_tools_jsonl;
use crate::support::{Output, Scratch, hook_inputs, hook_names, json_lines, logging_hooks, mecated};

const WRITE_THEN_TEXT: &str = r#"{"turns": [
  {"text": "writing", "tool_calls": [{"id": "w1", "name": "Write", "args": {"path": "out.txt", "content": "hello"}}]},
  {"text": "all done"}
]}"#;

/// `mecated run` of the Write script with `extra` flags, JSONL output, a store.
async fn run_write(scratch: &Scratch, extra: &[&str]) -> Output {
    run_write_prompt(scratch, "write it", extra).await
}

/// As [`run_write`], with `prompt`.
async fn run_write_prompt(scratch: &Scratch, prompt: &str, extra: &[&str]) -> Output {
    let script = scratch
        .write("script.json", WRITE_THEN_TEXT)
        .display()
        .to_string();
    let ws = scratch.ws().display().to_string();
    let store = scratch.path("store").display().to_string();
    let mut args = vec![
        "run",
        "--workspace",
        &ws,
        "--toolhive=false",
        "--output",
        "jsonl",
        "--store-dir",
        &store,
        "--mock-script",
        &script,
    ];
    args.extend(extra);
    args.push(prompt);
    mecated(scratch.dir.path(), &args, &[]).await
}

fn write_result(output: &Output) -> Value {
    json_lines(&output.stdout)
        .into_iter()
        .find(|e| e["type"] == "tool.result")
        .unwrap_or_else(|| panic!("no tool.result in {output:?}"))
}

fn records(scratch: &Scratch) -> Vec<Value> {
    find_tools_jsonl(&scratch.path("store"))
        .iter()
        .flat_map(|file| json_lines(&std::fs::read_to_string(file).unwrap()))
        .collect()
}

#[tokio::test]
async fn a_managed_deny_beats_approve_all_and_the_audit_names_the_rule_and_its_file() {
    let scratch = Scratch::new();
    let managed = scratch.write(
        "managed-settings.json",
        &json!({"permissions": {"deny": ["Write(out.txt)"]}}).to_string(),
    );
    let cli = scratch.write(
        "mine.json",
        &json!({"permissions": {"allow": ["Write"]}}).to_string(),
    );
    let output = run_write(
        &scratch,
        &["--approve", "all", "--settings", cli.to_str().unwrap()],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    assert!(!scratch.ws().join("out.txt").exists());
    let result = write_result(&output);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("denied by the rule Write(out.txt)"),
        "{result}"
    );
    let records = records(&scratch);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["approval"], json!({"by": "rule", "verdict": "deny"}));
    assert_eq!(records[0]["provenance"]["rule"], "Write(out.txt)");
    assert_eq!(records[0]["provenance"]["source"], managed.display().to_string());
}

#[tokio::test]
async fn a_project_allow_applies_only_with_trust_project_and_beats_read_only() {
    let scratch = Scratch::new();
    scratch.write(
        "ws/.mecatl/settings.json",
        &json!({"permissions": {"allow": ["Write(*.txt)"]}}).to_string(),
    );
    let untrusted = run_write(&scratch, &[]).await;
    assert_eq!(untrusted.code, 0, "{untrusted:?}");
    assert!(
        !scratch.ws().join("out.txt").exists(),
        "untrusted project settings were used"
    );
    let trusted = run_write(&scratch, &["--trust-project", "--session", "t"]).await;
    assert_eq!(trusted.code, 0, "{trusted:?}");
    assert_eq!(
        std::fs::read_to_string(scratch.ws().join("out.txt")).unwrap(),
        "hello"
    );
    let allowed: Vec<Value> = records(&scratch)
        .into_iter()
        .filter(|r| r["approval"]["verdict"] == "allow")
        .collect();
    assert_eq!(allowed.len(), 1);
    assert_eq!(allowed[0]["approval"]["by"], "rule");
    assert_eq!(allowed[0]["provenance"]["rule"], "Write(*.txt)");
}

#[tokio::test]
async fn a_pre_tool_use_hook_exiting_2_blocks_and_the_model_sees_its_reason() {
    let scratch = Scratch::new();
    let settings = scratch.write(
        "hooks.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [
            {"type": "command", "command": "echo 'generated files are read-only' >&2; exit 2"}
        ]}]}})
        .to_string(),
    );
    let output = run_write(
        &scratch,
        &["--approve", "all", "--settings", settings.to_str().unwrap()],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    assert!(!scratch.ws().join("out.txt").exists());
    let result = write_result(&output);
    assert_eq!(
        result["content"],
        "call to Write was blocked by a hook: generated files are read-only"
    );
    let records = records(&scratch);
    assert_eq!(records[0]["approval"], json!({"by": "hook", "verdict": "deny"}));
    assert!(
        records[0]["provenance"]["hook"]
            .as_str()
            .unwrap()
            .contains("exit 2")
    );
}

#[tokio::test]
async fn a_bad_settings_file_stops_the_build_naming_the_file_and_json_path() {
    let scratch = Scratch::new();
    let bad = scratch.write("bad.json", r#"{"permissions": {"deny": ["Shell", "Frob(x)"]}}"#);
    let output = run_write(&scratch, &["--settings", bad.to_str().unwrap()]).await;
    assert_eq!(output.code, 1, "{output:?}");
    assert!(
        output.stderr.contains("bad.json")
            && output.stderr.contains("$.permissions.deny[1]")
            && output.stderr.contains("unknown tool \"Frob\""),
        "{}",
        output.stderr
    );
}

#[tokio::test]
async fn policy_check_prints_the_decision_and_the_rule_that_made_it() {
    let scratch = Scratch::new();
    let settings = scratch.write(
        "s.json",
        &json!({"permissions": {"allow": ["Bash(cargo test:*)"], "deny": ["Bash(rm:*)"]}}).to_string(),
    );
    let ws = scratch.ws().display().to_string();
    let home = scratch.dir.path();
    let settings_arg = settings.display().to_string();
    let check = async |call: &str| {
        let args = [
            "policy",
            "check",
            "--workspace",
            ws.as_str(),
            "--toolhive=false",
            "--settings",
            settings_arg.as_str(),
            call,
        ];
        mecated(home, &args, &[]).await
    };
    let denied = check("Shell(cargo test && rm -rf build)").await;
    assert_eq!(denied.code, 0, "{denied:?}");
    assert_eq!(
        denied.stdout.trim(),
        format!("deny: rule Bash(rm:*) in {}", settings.display())
    );
    let allowed = check("Bash(cargo test --workspace)").await;
    assert_eq!(
        allowed.stdout.trim(),
        format!("allow: rule Bash(cargo test:*) in {}", settings.display())
    );
    let level = check("Shell(make)").await;
    assert!(level.stdout.starts_with("deny: the approval level"), "{level:?}");
    let usage = check("Shell(unclosed").await;
    assert_eq!(usage.code, 2, "{usage:?}");
}

#[tokio::test]
async fn tools_says_which_tools_rules_hide_or_always_ask_for() {
    let scratch = Scratch::new();
    let settings = scratch.write(
        "s.json",
        &json!({"permissions": {"deny": ["Bash"], "ask": ["Write"]}}).to_string(),
    );
    let ws = scratch.ws().display().to_string();
    let output = mecated(
        scratch.dir.path(),
        &[
            "tools",
            "--workspace",
            &ws,
            "--toolhive=false",
            "--settings",
            settings.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    assert!(
        output
            .stderr
            .contains("Shell is hidden from the model by the rule Bash"),
        "{}",
        output.stderr
    );
    assert!(
        output
            .stderr
            .contains("Write is always asked for by the rule Write"),
        "{}",
        output.stderr
    );
}

#[tokio::test]
async fn session_start_and_user_prompt_submit_hooks_fire_once_and_exit_2_blocks_the_prompt() {
    let scratch = Scratch::new();
    let settings = logging_hooks(&scratch);
    let output = run_write_prompt(
        &scratch,
        "write it to the vault",
        &["--approve", "all", "--settings", settings.to_str().unwrap()],
    )
    .await;
    assert_eq!(output.code, 1, "{output:?}");
    let events = json_lines(&output.stdout);
    let result = events.last().unwrap();
    assert_eq!(result["type"], "result");
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("blocked by the UserPromptSubmit hook")
            && error.contains("prompts may not name the vault"),
        "{result}"
    );
    assert!(
        !events.iter().any(|e| e["type"] == "turn.start"),
        "the blocked prompt never reached the model"
    );
    assert!(!scratch.ws().join("out.txt").exists());
    let inputs = hook_inputs(&scratch);
    assert_eq!(hook_names(&inputs), ["SessionStart", "UserPromptSubmit"]);
    assert_eq!(inputs[0]["source"], "startup");
    assert_eq!(inputs[1]["prompt"], "write it to the vault");
    assert_eq!(inputs[1]["cwd"], inputs[0]["cwd"]);
    assert!(inputs[1]["session_id"].as_str().is_some_and(|s| !s.is_empty()));
}

#[tokio::test]
async fn the_settings_default_mode_applies_unless_run_names_a_mode() {
    let scratch = Scratch::new();
    let settings = scratch.write(
        "s.json",
        &json!({"permissions": {"defaultMode": "plan"}}).to_string(),
    );
    let planned = run_write(
        &scratch,
        &["--approve", "all", "--settings", settings.to_str().unwrap()],
    )
    .await;
    assert_eq!(planned.code, 0, "{planned:?}");
    assert!(!scratch.ws().join("out.txt").exists());
    let result = write_result(&planned);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("not available in plan mode"),
        "{result}"
    );
    let named = run_write(
        &scratch,
        &[
            "--approve",
            "all",
            "--settings",
            settings.to_str().unwrap(),
            "--mode",
            "default",
            "--session",
            "m",
        ],
    )
    .await;
    assert_eq!(named.code, 0, "{named:?}");
    assert_eq!(
        std::fs::read_to_string(scratch.ws().join("out.txt")).unwrap(),
        "hello"
    );
}

#[tokio::test]
async fn a_stop_hook_fires_once_with_how_the_run_ended() {
    let scratch = Scratch::new();
    let settings = logging_hooks(&scratch);
    let output = run_write(
        &scratch,
        &["--approve", "all", "--settings", settings.to_str().unwrap()],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let inputs = hook_inputs(&scratch);
    assert_eq!(
        hook_names(&inputs),
        ["SessionStart", "UserPromptSubmit", "Stop"],
        "{inputs:?}"
    );
    assert_eq!(inputs[2]["stop_reason"], "end_turn");
    assert_eq!(inputs[2]["stop_hook_active"], false);
    // The next run of the same session (another process) resumes it.
    let session = json_lines(&output.stdout)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let again = run_write(
        &scratch,
        &[
            "--approve",
            "all",
            "--settings",
            settings.to_str().unwrap(),
            "--session",
            &session,
        ],
    )
    .await;
    assert_eq!(again.code, 0, "{again:?}");
    let inputs = hook_inputs(&scratch);
    assert_eq!(
        hook_names(&inputs[3..]),
        ["SessionStart", "UserPromptSubmit", "Stop"]
    );
    assert_eq!(inputs[3]["source"], "resume");
}

#[tokio::test]
async fn a_stop_hook_exiting_2_makes_the_model_go_on_with_its_reason_once() {
    let scratch = Scratch::new();
    // Blocks the first stop only: the marker file says it already did.
    let settings = scratch.write(
        "hooks.json",
        &json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command":
            "input=$(cat); printf '%s\\n' \"$input\" >> .stops.jsonl; \
             if [ ! -e .stopped-once ]; then touch .stopped-once; echo 'run the tests before you stop' >&2; exit 2; fi"}]}]}})
        .to_string(),
    );
    let script = r#"{"turns": [{"text": "all done"}, {"text": "tests pass, done"}]}"#;
    let store = scratch.path("store").display().to_string();
    let output = crate::support::mecated_run(
        &scratch,
        script,
        &[
            "--output",
            "jsonl",
            "--store-dir",
            &store,
            "--settings",
            settings.to_str().unwrap(),
            "finish up",
        ],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let events = json_lines(&output.stdout);
    let result = events.last().unwrap();
    assert_eq!(result["text"], "tests pass, done", "{result}");
    assert_eq!(result["turns"], 2);
    let continued = events.iter().find(|e| e["type"] == "hook.session").unwrap();
    assert_eq!(continued["event"], "Stop");
    assert_eq!(continued["action"], "continue");
    assert_eq!(continued["message"], "run the tests before you stop");
    let stops = json_lines(&std::fs::read_to_string(scratch.ws().join(".stops.jsonl")).unwrap());
    let active: Vec<&Value> = stops.iter().map(|s| &s["stop_hook_active"]).collect();
    assert_eq!(active, [false, true]);
}
