//! `ListDir`: one level, sorted, directories and symlinks marked.

use adapter_fstools::ListDir;
use serde_json::json;

use crate::support::{Ws, call, err, ok, outside};

#[tokio::test]
async fn one_level_sorted_with_dirs_and_symlinks_marked() {
    let ws = Ws::new();
    let elsewhere = outside();
    ws.file("b.txt", "");
    ws.file("a/inner.txt", "");
    ws.file(".hidden", "");
    ws.dir("c");
    ws.symlink("link-to-a", "a");
    ws.symlink("out", elsewhere.path());
    let text = ok(&call(&ListDir, &ws.env, json!({})).await).to_owned();
    assert_eq!(
        text,
        format!(
            ".hidden\na/\nb.txt\nc/\nlink-to-a -> a\nout -> {}",
            elsewhere.path().display()
        )
    );
    assert_eq!(
        ok(&call(&ListDir, &ws.env, json!({"path": "a"})).await),
        "inner.txt"
    );
    assert_eq!(
        ok(&call(&ListDir, &ws.env, json!({"path": "c"})).await),
        "(empty directory)"
    );
}

#[tokio::test]
async fn more_than_a_thousand_entries_end_with_a_count_note() {
    let ws = Ws::new().with_cap(1_000_000);
    for i in 0..1_003 {
        ws.file(&format!("d/e{i:04}"), "");
    }
    let result = call(&ListDir, &ws.env, json!({"path": "d"})).await;
    let lines: Vec<&str> = ok(&result).lines().collect();
    assert_eq!(lines.len(), 1_001);
    assert_eq!(lines[999], "e0999");
    assert!(lines[1_000].contains("1000 of 1003"), "{}", lines[1_000]);
}

#[tokio::test]
async fn a_file_or_missing_path_is_an_error_naming_it() {
    let ws = Ws::new();
    ws.file("f.txt", "");
    let text = err(&call(&ListDir, &ws.env, json!({"path": "f.txt"})).await).to_owned();
    assert!(
        text.contains("\"f.txt\"") && text.contains("not a directory"),
        "{text}"
    );
    let text = err(&call(&ListDir, &ws.env, json!({"path": "nope"})).await).to_owned();
    assert!(text.contains("\"nope\""), "{text}");
}
