//! `Edit`: exact replacement with match counting.

use adapter_fstools::Edit;
use serde_json::json;

use crate::support::{Ws, call, err, mode, ok, set_mode};

#[tokio::test]
async fn a_unique_match_is_replaced() {
    let ws = Ws::new();
    ws.file("main.rs", "fn main() {\n    // TODO: greet\n}\n");
    let result = call(
        &Edit,
        &ws.env,
        json!({"path": "main.rs", "old_string": "// TODO: greet", "new_string": "println!(\"hi\");"}),
    )
    .await;
    assert_eq!(ok(&result), "replaced 1 occurrence in main.rs");
    assert_eq!(ws.read("main.rs"), "fn main() {\n    println!(\"hi\");\n}\n");
    assert_eq!(ws.names("."), ["main.rs"]);
}

#[tokio::test]
async fn no_match_is_an_error() {
    let ws = Ws::new();
    ws.file("a.txt", "abc");
    let result = call(
        &Edit,
        &ws.env,
        json!({"path": "a.txt", "old_string": "xyz", "new_string": "q"}),
    )
    .await;
    let text = err(&result);
    assert!(text.contains("not found") && text.contains("\"a.txt\""), "{text}");
    assert_eq!(ws.read("a.txt"), "abc");
}

#[tokio::test]
async fn several_matches_need_replace_all_and_the_error_states_the_count() {
    let ws = Ws::new();
    ws.file("a.txt", "x = 1; x = 2; x = 3;");
    let result = call(
        &Edit,
        &ws.env,
        json!({"path": "a.txt", "old_string": "x =", "new_string": "y ="}),
    )
    .await;
    let text = err(&result);
    assert!(text.contains("3 times") && text.contains("replace_all"), "{text}");
    assert_eq!(ws.read("a.txt"), "x = 1; x = 2; x = 3;");

    let result = call(
        &Edit,
        &ws.env,
        json!({"path": "a.txt", "old_string": "x =", "new_string": "y =", "replace_all": true}),
    )
    .await;
    assert_eq!(ok(&result), "replaced 3 occurrences in a.txt");
    assert_eq!(ws.read("a.txt"), "y = 1; y = 2; y = 3;");
}

#[tokio::test]
async fn old_string_must_be_non_empty_and_differ_from_new_string() {
    let ws = Ws::new();
    ws.file("a.txt", "abc");
    let text = err(&call(
        &Edit,
        &ws.env,
        json!({"path": "a.txt", "old_string": "", "new_string": "q"}),
    )
    .await)
    .to_owned();
    assert!(text.contains("empty"), "{text}");
    let text = err(&call(
        &Edit,
        &ws.env,
        json!({"path": "a.txt", "old_string": "b", "new_string": "b"}),
    )
    .await)
    .to_owned();
    assert!(text.contains("identical"), "{text}");
}

#[tokio::test]
async fn permission_bits_are_kept() {
    let ws = Ws::new();
    let path = ws.file("tool.sh", "echo old\n");
    set_mode(&path, 0o700);
    ok(&call(
        &Edit,
        &ws.env,
        json!({"path": "tool.sh", "old_string": "old", "new_string": "new"}),
    )
    .await);
    assert_eq!(mode(&path), 0o700);
    assert_eq!(ws.read("tool.sh"), "echo new\n");
}

#[tokio::test]
async fn a_missing_or_binary_file_is_an_error() {
    let ws = Ws::new();
    let text = err(&call(
        &Edit,
        &ws.env,
        json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
    )
    .await)
    .to_owned();
    assert!(
        text.contains("\"nope.txt\"") && text.contains("not found"),
        "{text}"
    );
    assert!(!ws.path("nope.txt").exists());
    ws.file("blob", b"a\0b");
    err(&call(
        &Edit,
        &ws.env,
        json!({"path": "blob", "old_string": "a", "new_string": "c"}),
    )
    .await);
}
