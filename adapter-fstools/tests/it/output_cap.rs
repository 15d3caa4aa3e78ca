//! D10: every result, errors included, passes through the environment's cap.

use adapter_fstools::{Glob, Grep, ListDir, Read};
use engine_core::truncation_marker;
use serde_json::json;

use crate::support::{Ws, call, err, ok};

const CAP: usize = 300;

#[tokio::test]
async fn read_grep_glob_and_list_dir_are_capped_with_the_marker() {
    let ws = Ws::new().with_cap(CAP);
    let marker = truncation_marker(CAP);
    ws.file("big.txt", "needle é\n".repeat(200));
    for i in 0..100 {
        ws.file(&format!("files/file-{i:03}.txt"), "");
    }
    let results = [
        call(&Read, &ws.env, json!({"path": "big.txt"})).await,
        call(&Grep, &ws.env, json!({"pattern": "needle"})).await,
        call(&Glob, &ws.env, json!({"pattern": "**/*.txt"})).await,
        call(&ListDir, &ws.env, json!({"path": "files"})).await,
    ];
    for result in &results {
        let text = ok(result);
        assert!(text.len() <= CAP, "{} bytes", text.len());
        assert!(text.ends_with(&marker), "{text}");
    }
}

#[tokio::test]
async fn error_results_are_capped_too() {
    let ws = Ws::new().with_cap(CAP);
    let long = "x".repeat(5_000);
    let text = err(&call(&Read, &ws.env, json!({"path": long})).await).to_owned();
    assert!(text.len() <= CAP);
    assert!(text.ends_with(&truncation_marker(CAP)));
}
