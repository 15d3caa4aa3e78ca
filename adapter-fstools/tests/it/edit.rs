//! `Edit`: exact replacement with match counting.

use adapter_fstools::{Edit, MAX_EDIT_RESULT_BYTES};
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

#[tokio::test]
async fn edit_replace_all_refuses_a_result_over_the_cap() {
    let ws = Ws::new();
    // 100 KB of arguments' worth of amplification: 200,000 one-byte matches, each
    // replaced by 100 bytes, would make a 20 MB file.
    let original = "x".repeat(200_000);
    ws.file("a.txt", &original);
    let result = call(
        &Edit,
        &ws.env,
        json!({"path": "a.txt", "old_string": "x", "new_string": "y".repeat(100), "replace_all": true}),
    )
    .await;
    let text = err(&result);
    assert!(text.contains("20000000 bytes"), "names the computed size: {text}");
    assert!(
        text.contains(&MAX_EDIT_RESULT_BYTES.to_string()),
        "names the cap: {text}"
    );
    assert!(text.contains("nothing was written"), "{text}");
    assert!(text.contains("\"a.txt\""), "{text}");
    assert_eq!(ws.read("a.txt"), original, "the file is unchanged on disk");
    assert_eq!(ws.names("."), ["a.txt"], "no temp file is left behind");
}

#[tokio::test]
async fn edit_replace_all_accepts_a_result_exactly_at_the_cap_and_refuses_one_byte_more() {
    let ws = Ws::new();
    let cap = usize::try_from(MAX_EDIT_RESULT_BYTES).unwrap();
    // Each one-byte `x` becomes 16 bytes, so cap / 16 matches land exactly on the cap.
    let args = |path: &str| json!({"path": path, "old_string": "x", "new_string": "y".repeat(16), "replace_all": true});
    let at_cap = "x".repeat(cap / 16);
    ws.file("at.txt", &at_cap);
    ok(&call(&Edit, &ws.env, args("at.txt")).await);
    assert_eq!(
        std::fs::metadata(ws.path("at.txt")).unwrap().len(),
        MAX_EDIT_RESULT_BYTES
    );

    let one_more = format!("{at_cap}z");
    ws.file("over.txt", &one_more);
    let text = err(&call(&Edit, &ws.env, args("over.txt")).await).to_owned();
    assert!(text.contains(&format!("{} bytes", cap + 1)), "{text}");
    assert_eq!(ws.read("over.txt"), one_more);
}

#[tokio::test]
async fn a_file_over_the_cap_is_refused_as_too_large_before_it_is_read() {
    let ws = Ws::new();
    // 2 GiB of holes: refused from its size on the opened file, at once and without
    // reading it (a full read would take seconds and 2 GiB of memory, and then call
    // the zeros binary).
    let size = 2 * 1024 * 1024 * 1024_u64;
    let path = ws.path("huge.img");
    std::fs::File::create(&path).unwrap().set_len(size).unwrap();
    let started = std::time::Instant::now();
    let result = call(
        &Edit,
        &ws.env,
        json!({"path": "huge.img", "old_string": "a", "new_string": "b"}),
    )
    .await;
    let elapsed = started.elapsed();
    let text = err(&result);
    assert!(text.contains("\"huge.img\""), "{text}");
    assert!(text.contains(&format!("{size} bytes")), "names the size: {text}");
    assert!(
        text.contains(&format!("{MAX_EDIT_RESULT_BYTES} bytes")),
        "names the limit: {text}"
    );
    assert!(!text.contains("binary"), "{text}");
    assert!(elapsed < std::time::Duration::from_secs(2), "took {elapsed:?}");
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        size,
        "nothing was written"
    );

    // One byte over the cap is refused the same way; at the cap the file is edited.
    let cap = usize::try_from(MAX_EDIT_RESULT_BYTES).unwrap();
    ws.file("over.log", format!("{}\nold\n", "x".repeat(cap - 4)));
    let text = err(&call(
        &Edit,
        &ws.env,
        json!({"path": "over.log", "old_string": "old", "new_string": "new"}),
    )
    .await)
    .to_owned();
    assert!(text.contains(&format!("{} bytes", cap + 1)), "{text}");
    ws.file("at.log", format!("{}\nold\n", "x".repeat(cap - 5)));
    let result = call(
        &Edit,
        &ws.env,
        json!({"path": "at.log", "old_string": "old", "new_string": "new"}),
    )
    .await;
    assert_eq!(ok(&result), "replaced 1 occurrence in at.log");
}
