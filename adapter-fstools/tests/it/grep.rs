//! `Grep`: `path:line:text` sorted by path then line, binary files skipped, filters.

use adapter_fstools::{Grep, MAX_GLOB_PATTERN_BYTES, MAX_GREP_PATTERN_BYTES, REGEX_SIZE_LIMIT};
use serde_json::json;

use crate::support::{Ws, call, err, ok};

#[tokio::test]
async fn matches_are_sorted_by_path_then_line() {
    let ws = Ws::new();
    ws.file("b.txt", "TODO two\nnothing\nTODO four\n");
    ws.file("a/z.txt", "x TODO\n");
    ws.file("a.txt", "first TODO\r\n");
    ws.file("c/d/e.md", "no\nno\nTODO: deep");
    let result = call(&Grep, &ws.env, json!({"pattern": "TODO"})).await;
    assert_eq!(
        ok(&result),
        "a.txt:1:first TODO\na/z.txt:1:x TODO\nb.txt:1:TODO two\nb.txt:3:TODO four\nc/d/e.md:3:TODO: deep"
    );
}

#[tokio::test]
async fn binary_files_are_skipped() {
    let ws = Ws::new();
    ws.file("text.txt", "needle\n");
    ws.file("blob.bin", b"needle\0\x01\x02");
    let mut late = "needle\n".repeat(2_000).into_bytes();
    late.extend_from_slice(b"\xff\n");
    ws.file("late-invalid.txt", &late);
    assert_eq!(
        ok(&call(&Grep, &ws.env, json!({"pattern": "needle"})).await),
        "text.txt:1:needle"
    );
}

#[tokio::test]
async fn a_bad_regex_is_an_error_naming_the_pattern_and_the_reason() {
    let ws = Ws::new();
    let text = err(&call(&Grep, &ws.env, json!({"pattern": "fn (main"})).await).to_owned();
    assert!(text.contains("\"fn (main\""), "{text}");
    assert!(text.contains("unclosed group"), "{text}");
}

#[tokio::test]
async fn glob_filter_and_case_insensitive() {
    let ws = Ws::new();
    ws.file("src/lib.rs", "// Hello\n");
    ws.file("src/deep/mod.rs", "// hello\n");
    ws.file("notes.md", "hello\n");
    assert_eq!(
        ok(&call(&Grep, &ws.env, json!({"pattern": "hello", "glob": "*.rs"})).await),
        "src/deep/mod.rs:1:// hello"
    );
    assert_eq!(
        ok(&call(
            &Grep,
            &ws.env,
            json!({"pattern": "hello", "glob": "*.rs", "case_insensitive": true})
        )
        .await),
        "src/deep/mod.rs:1:// hello\nsrc/lib.rs:1:// Hello"
    );
    assert_eq!(
        ok(&call(
            &Grep,
            &ws.env,
            json!({"pattern": "(?i)hello", "path": "src", "glob": "deep/*.rs"})
        )
        .await),
        "src/deep/mod.rs:1:// hello"
    );
    let text = err(&call(&Grep, &ws.env, json!({"pattern": "x", "glob": "[z-"})).await).to_owned();
    assert!(text.contains("\"[z-\""), "{text}");
}

#[tokio::test]
async fn max_results_limits_and_notes_it() {
    let ws = Ws::new();
    ws.file("a.txt", "hit\n".repeat(5));
    ws.file("b.txt", "hit\n");
    let result = call(&Grep, &ws.env, json!({"pattern": "hit", "max_results": 3})).await;
    let text = ok(&result);
    assert!(
        text.starts_with("a.txt:1:hit\na.txt:2:hit\na.txt:3:hit\n["),
        "{text}"
    );
    assert!(text.contains("stopped after 3 matches"), "{text}");

    let result = call(&Grep, &ws.env, json!({"pattern": "hit", "max_results": 6})).await;
    assert_eq!(ok(&result).lines().count(), 6, "exactly the limit: no note");

    let text = err(&call(&Grep, &ws.env, json!({"pattern": "hit", "max_results": 5001})).await).to_owned();
    assert!(text.contains("5000"), "{text}");
}

#[tokio::test]
async fn the_default_limit_is_five_hundred() {
    let ws = Ws::new().with_cap(1_000_000);
    ws.file("many.txt", "hit\n".repeat(600));
    let result = call(&Grep, &ws.env, json!({"pattern": "hit"})).await;
    let lines: Vec<&str> = ok(&result).lines().collect();
    assert_eq!(lines.len(), 501);
    assert_eq!(lines[499], "many.txt:500:hit");
}

#[tokio::test]
async fn a_file_path_searches_that_file_and_ignore_files_apply_to_directories() {
    let ws = Ws::new();
    ws.file(".gitignore", "gen/\n");
    ws.file("gen/out.txt", "needle\n");
    ws.file(".git/HEAD", "needle\n");
    ws.file("src/a.txt", "needle\n");
    assert_eq!(
        ok(&call(&Grep, &ws.env, json!({"pattern": "needle"})).await),
        "src/a.txt:1:needle"
    );
    assert_eq!(
        ok(&call(
            &Grep,
            &ws.env,
            json!({"pattern": "needle", "path": "gen/out.txt"})
        )
        .await),
        "gen/out.txt:1:needle"
    );
    assert_eq!(
        ok(&call(&Grep, &ws.env, json!({"pattern": "absent"})).await),
        "no matches for \"absent\" in \".\""
    );
    let text = err(&call(&Grep, &ws.env, json!({"pattern": "x", "path": "missing"})).await).to_owned();
    assert!(text.contains("\"missing\""), "{text}");
}

#[tokio::test]
async fn grep_refuses_a_pattern_over_the_length_cap_before_compiling_it() {
    let ws = Ws::new();
    ws.file("a.txt", "needle\n");
    let pattern = "a".repeat(10_000_000);
    let started = std::time::Instant::now();
    let text = err(&call(&Grep, &ws.env, json!({"pattern": pattern})).await).to_owned();
    assert!(text.contains("pattern"), "names the argument: {text}");
    assert!(text.contains("10000000 bytes"), "names the length: {text}");
    assert!(
        text.contains(&MAX_GREP_PATTERN_BYTES.to_string()),
        "names the cap: {text}"
    );
    assert!(text.len() < 300, "does not echo the pattern: {text}");
    // Generous: compiling it took seconds and a gigabyte; refusing it takes nothing.
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[tokio::test]
async fn grep_refuses_a_short_regex_that_compiles_past_the_size_limit() {
    let ws = Ws::new();
    ws.file("a.txt", "needle\n");
    let pattern = r"(\w{1000}){1000}";
    let text = err(&call(&Grep, &ws.env, json!({"pattern": pattern})).await).to_owned();
    assert!(text.contains("size limit"), "{text}");
    assert!(
        text.contains(&REGEX_SIZE_LIMIT.to_string()),
        "names the limit: {text}"
    );
}

#[tokio::test]
async fn grep_refuses_a_glob_filter_over_the_length_cap() {
    let ws = Ws::new();
    ws.file("a.txt", "needle\n");
    let glob = "*".repeat(MAX_GLOB_PATTERN_BYTES + 1);
    let text = err(&call(&Grep, &ws.env, json!({"pattern": "needle", "glob": glob})).await).to_owned();
    assert!(text.contains("glob"), "names the argument: {text}");
    assert!(
        text.contains(&format!("{} bytes", MAX_GLOB_PATTERN_BYTES + 1)),
        "{text}"
    );
    assert!(
        text.contains(&MAX_GLOB_PATTERN_BYTES.to_string()),
        "names the cap: {text}"
    );
}
