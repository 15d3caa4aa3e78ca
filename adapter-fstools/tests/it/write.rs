//! `Write`: parents, bytes written, atomic replacement keeping permission bits.

use std::os::unix::fs::MetadataExt as _;

use adapter_fstools::Write;
use serde_json::json;

use crate::support::{Ws, call, err, mode, ok, set_mode};

#[tokio::test]
async fn creates_parent_directories_and_states_the_bytes_written() {
    let ws = Ws::new();
    let result = call(
        &Write,
        &ws.env,
        json!({"path": "a/b/c.txt", "content": "héllo\n"}),
    )
    .await;
    let text = ok(&result);
    assert!(text.contains("7 bytes") && text.contains("a/b/c.txt"), "{text}");
    assert_eq!(ws.read("a/b/c.txt"), "héllo\n");
}

#[tokio::test]
async fn a_pre_existing_file_is_replaced_atomically_and_keeps_its_permission_bits() {
    let ws = Ws::new();
    let path = ws.file("bin/run.sh", "old contents that are longer\n");
    set_mode(&path, 0o751);
    let inode_before = std::fs::metadata(&path).unwrap().ino();

    let result = call(
        &Write,
        &ws.env,
        json!({"path": "bin/run.sh", "content": "#!/bin/sh\n"}),
    )
    .await;
    let text = ok(&result);
    assert!(text.contains("10 bytes"), "{text}");
    assert_eq!(ws.read("bin/run.sh"), "#!/bin/sh\n");
    assert_eq!(mode(&path), 0o751);
    // Replaced by a rename (a new inode), and no temp file left beside it.
    assert_ne!(std::fs::metadata(&path).unwrap().ino(), inode_before);
    assert_eq!(ws.names("bin"), ["run.sh"]);
}

#[tokio::test]
async fn a_private_file_stays_private() {
    let ws = Ws::new();
    let path = ws.file("secret.env", "A=1\n");
    set_mode(&path, 0o600);
    ok(&call(&Write, &ws.env, json!({"path": "secret.env", "content": "A=2\n"})).await);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(ws.names("."), ["secret.env"]);
}

#[tokio::test]
async fn an_empty_content_writes_an_empty_file() {
    let ws = Ws::new();
    let text = ok(&call(&Write, &ws.env, json!({"path": "e.txt", "content": ""})).await).to_owned();
    assert!(text.contains("0 bytes"), "{text}");
    assert_eq!(ws.read("e.txt"), "");
}

#[tokio::test]
async fn a_directory_cannot_be_written() {
    let ws = Ws::new();
    ws.dir("src");
    let text = err(&call(&Write, &ws.env, json!({"path": "src", "content": "x"})).await).to_owned();
    assert!(text.contains("\"src\"") && text.contains("directory"), "{text}");
    let text = err(&call(&Write, &ws.env, json!({"path": "", "content": "x"})).await).to_owned();
    assert!(text.contains("directory"), "{text}");
}

#[tokio::test]
async fn a_file_in_the_way_of_a_parent_is_an_error_naming_the_path() {
    let ws = Ws::new();
    ws.file("plain", "x");
    let text = err(&call(
        &Write,
        &ws.env,
        json!({"path": "plain/child.txt", "content": "x"}),
    )
    .await)
    .to_owned();
    assert!(text.contains("\"plain/child.txt\""), "{text}");
    assert_eq!(ws.read("plain"), "x");
}
