//! `Glob`: matching, ignore files, sorting and the item limit.

use adapter_fstools::{Glob, MAX_GLOB_PATTERN_BYTES};
use serde_json::json;

use crate::support::{Ws, call, err, ok};

fn tree() -> Ws {
    let ws = Ws::new();
    ws.file("src/main.rs", "");
    ws.file("src/lib/util.rs", "");
    ws.file("build.rs", "");
    ws.file("README.md", "");
    ws.file("docs/guide.md", "");
    ws
}

#[tokio::test]
async fn a_single_star_stays_in_its_segment_and_double_star_crosses() {
    let ws = tree();
    assert_eq!(
        ok(&call(&Glob, &ws.env, json!({"pattern": "*.rs"})).await),
        "build.rs"
    );
    assert_eq!(
        ok(&call(&Glob, &ws.env, json!({"pattern": "**/*.rs"})).await),
        "build.rs\nsrc/lib/util.rs\nsrc/main.rs"
    );
    assert_eq!(
        ok(&call(&Glob, &ws.env, json!({"pattern": "**/*.{md,rs}"})).await),
        "README.md\nbuild.rs\ndocs/guide.md\nsrc/lib/util.rs\nsrc/main.rs"
    );
}

#[tokio::test]
async fn the_pattern_is_relative_to_the_search_dir_and_results_to_the_root() {
    let ws = tree();
    assert_eq!(
        ok(&call(&Glob, &ws.env, json!({"pattern": "*.rs", "path": "src"})).await),
        "src/main.rs"
    );
    assert_eq!(
        ok(&call(&Glob, &ws.env, json!({"pattern": "lib/*", "path": "src"})).await),
        "src/lib/util.rs"
    );
    assert_eq!(
        ok(&call(&Glob, &ws.env, json!({"pattern": "./lib/*", "path": "./src/"})).await),
        "src/lib/util.rs"
    );
}

#[tokio::test]
async fn directories_are_not_listed() {
    let ws = tree();
    assert_eq!(
        ok(&call(&Glob, &ws.env, json!({"pattern": "**/lib*"})).await),
        "no files match \"**/lib*\" in \".\""
    );
}

#[tokio::test]
async fn ignore_files_are_honoured_and_git_is_skipped() {
    let ws = Ws::new();
    ws.file(".gitignore", "target/\n*.log\n");
    ws.file(".ignore", "secret.txt\n");
    ws.file("keep.txt", "");
    ws.file("secret.txt", "");
    ws.file("debug.log", "");
    ws.file("target/out.txt", "");
    ws.file("sub/deep.log", "");
    ws.file("sub/.gitignore", "local.txt\n");
    ws.file("sub/local.txt", "");
    ws.file("sub/other.txt", "");
    ws.file(".git/config", "");
    ws.file(".github/ci.yml", "");
    assert_eq!(
        ok(&call(&Glob, &ws.env, json!({"pattern": "**/*"})).await),
        ".github/ci.yml\n.gitignore\n.ignore\nkeep.txt\nsub/.gitignore\nsub/other.txt"
    );
    // The root's ignore files apply when searching below it.
    assert_eq!(
        ok(&call(&Glob, &ws.env, json!({"pattern": "*", "path": "sub"})).await),
        "sub/.gitignore\nsub/other.txt"
    );
}

#[tokio::test]
async fn more_than_a_thousand_matches_end_with_a_count_note() {
    let ws = Ws::new().with_cap(1_000_000);
    for i in 0..1_005 {
        ws.file(&format!("many/f{i:04}.txt"), "");
    }
    let result = call(&Glob, &ws.env, json!({"pattern": "**/*.txt"})).await;
    let lines: Vec<&str> = ok(&result).lines().collect();
    assert_eq!(lines.len(), 1_001);
    assert_eq!(lines[0], "many/f0000.txt");
    assert_eq!(lines[999], "many/f0999.txt");
    assert!(lines[1_000].contains("1000 of 1005"), "{}", lines[1_000]);
}

#[tokio::test]
async fn a_bad_pattern_is_an_error_naming_it() {
    let ws = tree();
    let text = err(&call(&Glob, &ws.env, json!({"pattern": "src/[a-"})).await).to_owned();
    assert!(text.contains("\"src/[a-\""), "{text}");
}

#[tokio::test]
async fn a_file_or_missing_path_is_an_error() {
    let ws = tree();
    err(&call(&Glob, &ws.env, json!({"pattern": "*", "path": "build.rs"})).await);
    let text = err(&call(&Glob, &ws.env, json!({"pattern": "*", "path": "nope"})).await).to_owned();
    assert!(text.contains("\"nope\""), "{text}");
}

#[tokio::test]
async fn glob_refuses_a_pattern_over_the_length_cap_without_panicking() {
    let ws = tree();
    // About 105 KB: globset's regex for it exceeds the regex size limit, which its
    // matcher compilation answers with a panic.
    let pattern = "{a,b}?[!c]*".repeat(10_000);
    assert!(pattern.len() > 100_000);
    let text = err(&call(&Glob, &ws.env, json!({"pattern": pattern})).await).to_owned();
    assert!(text.contains("glob pattern"), "names the argument: {text}");
    assert!(
        text.contains(&pattern.len().to_string()),
        "names the length: {text}"
    );
    assert!(
        text.contains(&MAX_GLOB_PATTERN_BYTES.to_string()),
        "names the cap: {text}"
    );
    assert!(text.len() < 300, "does not echo the pattern: {text}");
}

#[tokio::test]
async fn glob_patterns_up_to_the_cap_compile_or_fail_as_error_results() {
    let ws = tree();
    for unit in ["?", "*", "[!a]", "{a,b}", "**/", "[^\u{10FFFF}]"] {
        let pattern = unit.repeat(MAX_GLOB_PATTERN_BYTES / unit.len());
        assert!(pattern.len() <= MAX_GLOB_PATTERN_BYTES);
        // Either outcome is fine; a panic would fail the test.
        let _ = call(&Glob, &ws.env, json!({"pattern": pattern})).await;
    }
}
