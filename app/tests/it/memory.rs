//! Project memory and the user model end to end: scripted sessions that remember and
//! recall across processes, the system-prompt index and operator profile, the audit
//! trail, permissions, `mecated memory`, and the flags' refusals.

use serde_json::Value;

use crate::support::{Output, Scratch, json_lines, mecated};

const REMEMBER: &str = r#"{"turns": [
  {"text": "noting", "tool_calls": [{"id": "m1", "name": "Remember", "args": {"key": "build/test-command", "value": "cargo nextest run --workspace", "description": "how the tests are run"}}]},
  {"text": "noted"}
]}"#;

const RECALL: &str = r#"{"turns": [
  {"text": "checking", "tool_calls": [{"id": "r1", "name": "Recall", "args": {"key": "build/test-command"}}]},
  {"text": "recalled"}
]}"#;

const REMEMBER_USER: &str = r#"{"turns": [
  {"text": "noting", "tool_calls": [{"id": "u1", "name": "RememberUser", "args": {"key": "editor", "value": "helix, with vim keys", "description": "preferred editor"}}]},
  {"text": "noted"}
]}"#;

/// `mecated ARGS…` with the scratch home, memory and user model in scratch dirs
/// outside the workspace.
async fn mecated_in(scratch: &Scratch, args: &[&str]) -> Output {
    let ws = scratch.ws().display().to_string();
    let memory = scratch.path("memory").display().to_string();
    let user = scratch.path("usermodel").display().to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend([
        "--workspace",
        ws.as_str(),
        "--memory-dir",
        memory.as_str(),
        "--user-model-dir",
        user.as_str(),
    ]);
    mecated(scratch.dir.path(), &all, &[]).await
}

async fn run_script(scratch: &Scratch, name: &str, script: &str, extra: &[&str]) -> Output {
    let script = scratch.write(name, script).display().to_string();
    let store = scratch.path("store").display().to_string();
    let mut args = vec![
        "run",
        "--toolhive=false",
        "--store-dir",
        store.as_str(),
        "--output",
        "jsonl",
        "--mock-script",
        script.as_str(),
    ];
    args.extend(extra);
    mecated_in(scratch, &args).await
}

fn results(output: &Output) -> Vec<Value> {
    json_lines(&output.stdout)
        .into_iter()
        .filter(|e| e["type"] == "tool.result")
        .collect()
}

#[tokio::test]
async fn a_remembered_fact_is_in_the_next_sessions_prompt_and_recalled() {
    let scratch = Scratch::new();
    let output = run_script(
        &scratch,
        "remember.json",
        REMEMBER,
        &["--approve", "all", "note how tests run"],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let first = results(&output);
    assert_eq!(
        first[0]["content"],
        r#"remembered key="build/test-command" version="1""#
    );
    assert_eq!(first[0]["is_error"], false);

    // The write is an ordinary audited call.
    let session = json_lines(&output.stdout)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let audit: Vec<Value> = std::fs::read_dir(scratch.path("store/sid-v1"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tools.jsonl"))
        .flat_map(|p| json_lines(&std::fs::read_to_string(p).unwrap()))
        .collect();
    let record = audit.iter().find(|r| r["tool"] == "Remember").unwrap();
    assert_eq!(record["session_id"], session.as_str());
    assert_eq!(
        record["result"],
        r#"remembered key="build/test-command" version="1""#
    );

    // A new session on the same directory has the key in its system prompt.
    let prompt = mecated_in(
        &scratch,
        &["run", "--toolhive=false", "--mock", "--print-system-prompt"],
    )
    .await;
    assert_eq!(prompt.code, 0, "{prompt:?}");
    assert!(
        prompt
            .stdout
            .contains("<memory-index>\n- build/test-command (v1): how the tests are run\n</memory-index>"),
        "{}",
        prompt.stdout
    );
    assert!(
        !prompt.stdout.contains("cargo nextest"),
        "the index has no values"
    );

    // …and recalls it.
    let output = run_script(&scratch, "recall.json", RECALL, &["recall it"]).await;
    assert_eq!(output.code, 0, "{output:?}");
    let recalled = results(&output);
    assert_eq!(recalled[0]["is_error"], false);
    assert_eq!(
        recalled[0]["content"],
        format!(
            "{}\n<memory-value key=\"build/test-command\" version=\"1\">\ncargo nextest run --workspace\n</memory-value>",
            engine_core::MEMORY_DATA_LINE
        )
    );
}

#[tokio::test]
async fn the_default_approval_denies_a_remember_and_accept_edits_allows_it() {
    let scratch = Scratch::new();
    let output = run_script(&scratch, "remember.json", REMEMBER, &["note it"]).await;
    assert_eq!(output.code, 0, "{output:?}");
    let denied = results(&output);
    assert_eq!(denied[0]["is_error"], true);
    assert!(!scratch.path("memory").exists(), "nothing was written");

    let output = run_script(
        &scratch,
        "remember.json",
        REMEMBER,
        &["--mode", "acceptEdits", "note it"],
    )
    .await;
    assert_eq!(results(&output)[0]["is_error"], false, "{output:?}");

    let output = run_script(
        &scratch,
        "remember.json",
        REMEMBER,
        &["--mode", "plan", "--approve", "all", "note"],
    )
    .await;
    let refused = results(&output);
    assert_eq!(refused[0]["is_error"], true);
    assert!(
        refused[0]["content"]
            .as_str()
            .unwrap()
            .contains("not available in plan mode"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn the_user_model_lands_in_the_operator_profile() {
    let scratch = Scratch::new();
    let output = run_script(
        &scratch,
        "user.json",
        REMEMBER_USER,
        &["--approve", "all", "note"],
    )
    .await;
    assert_eq!(
        results(&output)[0]["content"],
        r#"remembered key="user/editor" version="1""#
    );
    let prompt = mecated_in(
        &scratch,
        &["run", "--mock", "--toolhive=false", "--print-system-prompt"],
    )
    .await;
    assert!(
        prompt.stdout.contains("<operator-profile>\n")
            && prompt
                .stdout
                .contains("- user/editor: helix, with vim keys (preferred editor)\n</operator-profile>"),
        "{}",
        prompt.stdout
    );
    let list = mecated_in(&scratch, &["memory", "list", "--user"]).await;
    assert_eq!(list.code, 0, "{list:?}");
    assert!(list.stdout.starts_with("user/editor  v1  "), "{}", list.stdout);
}

#[tokio::test]
async fn tools_lists_both_families_and_the_flags_turn_them_off() {
    let scratch = Scratch::new();
    let output = mecated_in(&scratch, &["tools", "--toolhive=false", "--json"]).await;
    assert_eq!(output.code, 0, "{output:?}");
    let report: Value = serde_json::from_str(&output.stdout).unwrap();
    let memory: Vec<(&str, bool)> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["family"] == "memory")
        .map(|t| (t["name"].as_str().unwrap(), t["read_only"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        memory,
        [
            ("ForgetMemory", false),
            ("ForgetUser", false),
            ("Recall", true),
            ("RecallUser", true),
            ("Remember", false),
            ("RememberUser", false),
            ("SearchMemory", true),
            ("SearchUserModel", true),
        ]
    );
    let plan = mecated_in(&scratch, &["tools", "--toolhive=false", "--mode", "plan"]).await;
    assert!(
        plan.stdout.contains("Recall ") && !plan.stdout.contains("Remember "),
        "{}",
        plan.stdout
    );

    let ws = scratch.ws().display().to_string();
    let off = mecated(
        scratch.dir.path(),
        &[
            "tools",
            "--toolhive=false",
            "--workspace",
            &ws,
            "--no-memory",
            "--no-user-model",
            "--json",
        ],
        &[],
    )
    .await;
    let report: Value = serde_json::from_str(&off.stdout).unwrap();
    assert!(
        !report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["family"] == "memory")
    );
}

#[tokio::test]
async fn the_default_directories_live_under_the_state_and_config_homes() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let script = scratch.write("remember.json", REMEMBER).display().to_string();
    let state = scratch.path("state").display().to_string();
    let output = mecated(
        scratch.dir.path(),
        &[
            "run",
            "--toolhive=false",
            "--workspace",
            &ws,
            "--approve",
            "all",
            "--mock-script",
            &script,
            "go",
        ],
        &[("XDG_STATE_HOME", &state)],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let token = app::workspace_token(&scratch.ws());
    assert!(
        scratch
            .path("state/mecatl/memory")
            .join(&token)
            .join("memory.json")
            .exists()
    );
    let list = mecated(
        scratch.dir.path(),
        &["memory", "list", "--workspace", &ws],
        &[("XDG_STATE_HOME", &state)],
    )
    .await;
    assert!(list.stdout.starts_with("build/test-command  v1  "), "{list:?}");
    // Without XDG_STATE_HOME the default is under ~/.local/state.
    let home = mecated(scratch.dir.path(), &["memory", "list", "--workspace", &ws], &[]).await;
    assert_eq!(home.code, 0, "{home:?}");
    assert!(
        home.stderr.contains(".local/state/mecatl/memory/"),
        "{}",
        home.stderr
    );
}

#[tokio::test]
async fn a_memory_dir_inside_the_workspace_is_refused() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let inside = scratch.ws().join(".memory").display().to_string();
    let output = mecated(
        scratch.dir.path(),
        &[
            "tools",
            "--toolhive=false",
            "--workspace",
            &ws,
            "--memory-dir",
            &inside,
        ],
        &[],
    )
    .await;
    assert_eq!(output.code, 1, "{output:?}");
    let root = std::fs::canonicalize(scratch.ws()).unwrap();
    assert!(
        output.stderr.contains(&format!(
            "--memory-dir {inside} cannot be used: it lies inside the workspace {}; memory must live outside it",
            root.display()
        )),
        "{}",
        output.stderr
    );
    let list = mecated(
        scratch.dir.path(),
        &["memory", "list", "--workspace", &ws, "--memory-dir", &inside],
        &[],
    )
    .await;
    assert_eq!(list.code, 2, "{list:?}");
    assert!(
        list.stderr.contains("lies inside the workspace"),
        "{}",
        list.stderr
    );
}

#[tokio::test]
async fn memory_show_and_forget_prune_what_was_remembered() {
    let scratch = Scratch::new();
    run_script(&scratch, "remember.json", REMEMBER, &["--approve", "all", "note"]).await;
    let show = mecated_in(&scratch, &["memory", "show", "build/test-command"]).await;
    assert_eq!(show.code, 0, "{show:?}");
    assert!(
        show.stdout
            .starts_with("key: build/test-command\nversion: 1\nupdated_at: "),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout
            .contains("\nwriter: Remember\ndescription: how the tests are run\nhistory: v1 written ")
    );
    assert!(
        show.stdout.ends_with("\nvalue:\ncargo nextest run --workspace\n"),
        "{}",
        show.stdout
    );

    let forget = mecated_in(&scratch, &["memory", "forget", "build/test-command"]).await;
    assert_eq!(forget.code, 0, "{forget:?}");
    assert_eq!(forget.stdout, "forgot key=\"build/test-command\" version=\"2\"\n");
    let list = mecated_in(&scratch, &["memory", "list"]).await;
    assert_eq!(list.stdout, "");
    assert!(
        list.stderr.contains("[memory] nothing remembered in "),
        "{}",
        list.stderr
    );
    let show = mecated_in(&scratch, &["memory", "show", "build/test-command"]).await;
    assert_eq!(show.code, 1);
    assert!(
        show.stderr.contains("no memory \"build/test-command\" in ")
            && show
                .stderr
                .contains(": it was forgotten at version 2 (mecated memory forget)"),
        "{}",
        show.stderr
    );
    let again = mecated_in(&scratch, &["memory", "forget", "build/test-command"]).await;
    assert_eq!(again.code, 1);
    assert!(
        again
            .stderr
            .contains("error: no memory \"build/test-command\" in "),
        "{}",
        again.stderr
    );
    let bad = mecated_in(&scratch, &["memory", "show", "Not A Key"]).await;
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("error: invalid memory key \"Not A Key\""),
        "{}",
        bad.stderr
    );
    let json = mecated_in(&scratch, &["memory", "list", "--json"]).await;
    let value: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(value["keys"], serde_json::json!([]));
    let off = mecated_in(&scratch, &["memory", "list", "--user", "--no-user-model"]).await;
    assert_eq!(off.code, 2, "{off:?}");
}

#[tokio::test]
async fn a_corrupt_memory_file_is_reported_to_the_model_and_the_operator_and_kept() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.path("memory")).unwrap();
    let file = scratch.path("memory/memory.json");
    std::fs::write(&file, "{\"format\":\"mecatl-memory/1\",\"docu").unwrap();
    let output = run_script(&scratch, "recall.json", RECALL, &["recall"]).await;
    assert_eq!(output.code, 0, "{output:?}");
    let result = &results(&output)[0];
    assert_eq!(result["is_error"], true);
    let text = result["content"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "memory file {} cannot be used: it is not valid JSON",
            file.display()
        )),
        "{text}"
    );
    let list = mecated_in(&scratch, &["memory", "list"]).await;
    assert_eq!(list.code, 1);
    assert!(
        list.stderr
            .contains("a torn or hand-edited file is never replaced"),
        "{}",
        list.stderr
    );
    let prompt = mecated_in(
        &scratch,
        &["run", "--mock", "--toolhive=false", "--print-system-prompt"],
    )
    .await;
    assert_eq!(prompt.code, 0, "{prompt:?}");
    assert!(!prompt.stdout.contains("<memory-index>"));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\"format\":\"mecatl-memory/1\",\"docu"
    );
}

/// `mecated ARGS…` on the `--store-url` database `name` of `cluster` (password from
/// `PGPASSWORD`), with the scratch workspace and no memory flags.
async fn mecated_on_database(
    scratch: &Scratch,
    cluster: &test_peers::PgCluster,
    name: &str,
    args: &[&str],
) -> Output {
    let ws = scratch.ws().display().to_string();
    let url = cluster.url_without_password(name);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--workspace", ws.as_str(), "--store-url", url.as_str()]);
    mecated(scratch.dir.path(), &all, &[("PGPASSWORD", cluster.password())]).await
}

/// With `--store-url`, project memory lives in the database: one process remembers,
/// a second recalls it and has it in its prompt's index, `mecated memory` sees and
/// prunes it, and nothing lands in the default directory. `--memory-dir` keeps the
/// scope in files instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_store_url_one_process_remembers_and_another_recalls_from_the_database() {
    let Some(cluster) = test_peers::PgCluster::shared(
        "with_a_store_url_one_process_remembers_and_another_recalls_from_the_database",
    ) else {
        return;
    };
    let name = cluster.fresh_database("mem");
    let scratch = Scratch::new();
    let remember = scratch.write("remember.json", REMEMBER).display().to_string();
    let recall = scratch.write("recall.json", RECALL).display().to_string();
    let run = |script: &str| {
        vec![
            "run".to_owned(),
            "--toolhive=false".to_owned(),
            "--output".to_owned(),
            "jsonl".to_owned(),
            "--approve".to_owned(),
            "all".to_owned(),
            "--mock-script".to_owned(),
            script.to_owned(),
            "go".to_owned(),
        ]
    };
    let args = run(&remember);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = mecated_on_database(&scratch, cluster, &name, &args).await;
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        results(&output)[0]["content"],
        r#"remembered key="build/test-command" version="1""#
    );
    let scope = app::project_memory_scope(&std::fs::canonicalize(scratch.ws()).unwrap());
    assert_eq!(
        cluster.psql(
            &name,
            "SELECT string_agg(scope, ',' ORDER BY scope) FROM mecated_memory"
        ),
        scope
    );
    assert!(
        !scratch.path(".local/state/mecatl").exists(),
        "no memory directory was made"
    );

    let args = run(&recall);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = mecated_on_database(&scratch, cluster, &name, &args).await;
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        results(&output)[0]["content"],
        format!(
            "{}\n<memory-value key=\"build/test-command\" version=\"1\">\ncargo nextest run --workspace\n</memory-value>",
            engine_core::MEMORY_DATA_LINE
        )
    );
    let prompt = mecated_on_database(
        &scratch,
        cluster,
        &name,
        &["run", "--toolhive=false", "--mock", "--print-system-prompt"],
    )
    .await;
    assert!(
        prompt
            .stdout
            .contains("<memory-index>\n- build/test-command (v1): how the tests are run\n</memory-index>"),
        "{prompt:?}"
    );

    let list = mecated_on_database(&scratch, cluster, &name, &["memory", "list", "--json"]).await;
    assert_eq!(list.code, 0, "{list:?}");
    let value: Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(value["scope"], scope.as_str());
    assert_eq!(value["dir"], Value::Null);
    assert_eq!(value["keys"][0]["key"], "build/test-command");

    // An explicit --memory-dir wins: that scope is in files, empty.
    let dir = scratch.path("files-memory").display().to_string();
    let files = mecated_on_database(
        &scratch,
        cluster,
        &name,
        &["memory", "list", "--memory-dir", &dir],
    )
    .await;
    assert_eq!(files.code, 0, "{files:?}");
    assert!(
        files
            .stderr
            .contains(&format!("[memory] nothing remembered in {dir}")),
        "{}",
        files.stderr
    );

    let forget = mecated_on_database(
        &scratch,
        cluster,
        &name,
        &["memory", "forget", "build/test-command"],
    )
    .await;
    assert_eq!(forget.code, 0, "{forget:?}");
    assert_eq!(forget.stdout, "forgot key=\"build/test-command\" version=\"2\"\n");
    let list = mecated_on_database(&scratch, cluster, &name, &["memory", "list"]).await;
    assert!(
        list.stderr.contains(&format!(
            "[memory] nothing remembered in scope {scope:?} in PostgreSQL at 127.0.0.1:{}/{name}",
            cluster.port()
        )),
        "{}",
        list.stderr
    );
}
