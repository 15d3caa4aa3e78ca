//! `Read`: numbered lines, windows, binary files, directories.

use adapter_fstools::Read;
use serde_json::json;

use crate::support::{Ws, call, call_raw, err, ok};

#[tokio::test]
async fn lines_are_numbered_with_a_tab() {
    let ws = Ws::new();
    ws.file("a.txt", "alpha\n\nbeta");
    let result = call(&Read, &ws.env, json!({"path": "a.txt"})).await;
    assert_eq!(ok(&result), "1\talpha\n2\t\n3\tbeta");
}

#[tokio::test]
async fn offset_and_limit_select_a_window_and_a_note_tells_how_to_go_on() {
    let ws = Ws::new();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    ws.file("ten.txt", text);
    let result = call(
        &Read,
        &ws.env,
        json!({"path": "ten.txt", "offset": 3, "limit": 2}),
    )
    .await;
    assert_eq!(
        ok(&result),
        "3\tline 3\n4\tline 4\n[showing lines 3-4 of 10; use offset=5 to read more]"
    );
    let result = call(&Read, &ws.env, json!({"path": "ten.txt", "offset": 9})).await;
    assert_eq!(ok(&result), "9\tline 9\n10\tline 10");
    let result = call(
        &Read,
        &ws.env,
        json!({"path": "ten.txt", "offset": 10, "limit": u64::MAX}),
    )
    .await;
    assert_eq!(ok(&result), "10\tline 10");
}

#[tokio::test]
async fn the_default_limit_is_two_thousand_lines() {
    let ws = Ws::new().with_cap(1_000_000);
    let text: String = (1..=2_500).map(|i| format!("{i}\n")).collect();
    ws.file("long.txt", text);
    let result = call(&Read, &ws.env, json!({"path": "long.txt"})).await;
    let text = ok(&result);
    assert!(text.contains("\n2000\t2000\n"), "line 2000 shown");
    assert!(!text.contains("2001\t"), "line 2001 not shown");
    assert!(text.ends_with("[showing lines 1-2000 of 2500; use offset=2001 to read more]"));
}

#[tokio::test]
async fn bad_offsets_are_errors() {
    let ws = Ws::new();
    ws.file("a.txt", "one\ntwo\n");
    let text = err(&call(&Read, &ws.env, json!({"path": "a.txt", "offset": 5})).await).to_owned();
    assert!(
        text.contains("past the end") && text.contains("2 lines"),
        "{text}"
    );
    err(&call(&Read, &ws.env, json!({"path": "a.txt", "offset": 0})).await);
    err(&call(&Read, &ws.env, json!({"path": "a.txt", "limit": 0})).await);
}

#[tokio::test]
async fn a_binary_file_is_an_error_stating_its_size() {
    let ws = Ws::new();
    let mut bytes = b"text then a nul".to_vec();
    bytes.push(0);
    bytes.extend_from_slice(&[b'x'; 100]);
    ws.file("blob.bin", &bytes);
    let text = err(&call(&Read, &ws.env, json!({"path": "blob.bin"})).await).to_owned();
    assert!(text.contains("\"blob.bin\"") && text.contains("binary"), "{text}");
    assert!(text.contains(&format!("{} bytes", bytes.len())), "{text}");

    // Invalid UTF-8 far past the first 8 KiB also makes a file binary.
    let mut late = "ok\n".repeat(5_000).into_bytes();
    late.extend_from_slice(b"\xff\xfe\n");
    ws.file("late.txt", &late);
    let text = err(&call(&Read, &ws.env, json!({"path": "late.txt", "limit": 1})).await).to_owned();
    assert!(
        text.contains(&format!("binary file ({} bytes)", late.len())),
        "{text}"
    );
}

#[tokio::test]
async fn a_directory_is_an_error_pointing_to_list_dir() {
    let ws = Ws::new();
    ws.dir("src");
    let text = err(&call(&Read, &ws.env, json!({"path": "src"})).await).to_owned();
    assert!(text.contains("\"src\"") && text.contains("ListDir"), "{text}");
}

#[tokio::test]
async fn a_missing_file_is_an_error_naming_the_path_as_given() {
    let ws = Ws::new();
    let text = err(&call(&Read, &ws.env, json!({"path": "./docs/../nope.md"})).await).to_owned();
    assert!(text.contains("\"./docs/../nope.md\""), "{text}");
    assert!(text.contains("not found"), "{text}");
}

#[tokio::test]
async fn an_empty_file_says_so() {
    let ws = Ws::new();
    ws.file("empty.txt", "");
    assert_eq!(
        ok(&call(&Read, &ws.env, json!({"path": "empty.txt"})).await),
        "(empty file)"
    );
}

#[tokio::test]
async fn invalid_arguments_get_the_uniform_message() {
    let ws = Ws::new();
    let result = call_raw(&Read, &ws.env, r#"{"offset": 1}"#).await;
    let text = err(&result);
    assert!(text.starts_with("invalid arguments for tool Read:"), "{text}");
    assert!(text.contains("path"), "{text}");
    let result = call_raw(&Read, &ws.env, r#"{"path": "a", "bogus": 1}"#).await;
    assert!(err(&result).contains("bogus"));
}

#[tokio::test]
async fn a_fifo_is_refused_without_blocking() {
    let ws = Ws::new();
    let made = std::process::Command::new("mkfifo")
        .arg(ws.path("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    let text = err(&call(&Read, &ws.env, json!({"path": "pipe"})).await).to_owned();
    assert!(
        text.contains("\"pipe\"") && text.contains("not a regular file"),
        "{text}"
    );
    let text = err(&call(
        &adapter_fstools::Write,
        &ws.env,
        json!({"path": "pipe", "content": "x"}),
    )
    .await)
    .to_owned();
    assert!(text.contains("not a regular file"), "{text}");
    ws.file("text.txt", "needle\n");
    let result = call(&adapter_fstools::Grep, &ws.env, json!({"pattern": "needle"})).await;
    assert_eq!(ok(&result), "text.txt:1:needle");
}

/// With the blocking pool's only thread taken, a small file of a workspace on a local
/// disk is still read (on the executor), and a larger one waits for the pool.
#[test]
fn a_small_local_file_is_read_on_the_executor_and_a_large_one_on_the_blocking_pool() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let ws = Ws::new();
        ws.file("small.txt", "hello\n");
        ws.file("large.txt", "x\n".repeat(40_000));
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (taken, pool_busy) = tokio::sync::oneshot::channel();
        let blocker = tokio::task::spawn_blocking(move || {
            taken.send(()).unwrap();
            let _ = held.recv();
        });
        pool_busy.await.unwrap();
        let small = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            call(&Read, &ws.env, json!({"path": "small.txt"})),
        )
        .await
        .expect("a small file waited for the blocking pool (is the temp dir on a local disk?)");
        assert_eq!(ok(&small), "1\thello");
        let large = tokio::time::timeout(
            std::time::Duration::from_millis(300),
            call(&Read, &ws.env, json!({"path": "large.txt"})),
        )
        .await;
        assert!(large.is_err(), "an 80 KB file was read on the executor");
        release.send(()).unwrap();
        blocker.await.unwrap();
        let large = call(&Read, &ws.env, json!({"path": "large.txt"})).await;
        assert!(ok(&large).starts_with("1\tx\n2\tx\n"));
    });
}
