//! Workspace confinement: `..`, absolute paths and symlinks never lead out.

use adapter_fstools::{Edit, Glob, Grep, ListDir, Read, Write};
use serde_json::json;

use crate::support::{Ws, assert_outside, call, err, ok, outside};

#[tokio::test]
async fn dot_dot_escapes_are_refused_by_every_path_tool() {
    let ws = Ws::new();
    let env = &ws.env;
    assert_outside(
        &call(&Read, env, json!({"path": "../secret.txt"})).await,
        "../secret.txt",
    );
    assert_outside(
        &call(&Write, env, json!({"path": "a/../../x.txt", "content": "x"})).await,
        "a/../../x.txt",
    );
    assert_outside(
        &call(
            &Edit,
            env,
            json!({"path": "../x", "old_string": "a", "new_string": "b"}),
        )
        .await,
        "../x",
    );
    assert_outside(
        &call(&Glob, env, json!({"pattern": "*", "path": ".."})).await,
        "..",
    );
    assert_outside(
        &call(&Grep, env, json!({"pattern": "x", "path": "../"})).await,
        "../",
    );
    assert_outside(&call(&ListDir, env, json!({"path": ".."})).await, "..");
    assert!(!ws.root().parent().unwrap().join("x.txt").exists());
}

#[tokio::test]
async fn dot_dot_that_stays_inside_is_fine() {
    let ws = Ws::new();
    ws.file("a.txt", "hello\n");
    ws.dir("sub");
    let result = call(&Read, &ws.env, json!({"path": "sub/../a.txt"})).await;
    assert_eq!(ok(&result), "1\thello");
}

#[tokio::test]
async fn absolute_paths_elsewhere_are_refused_and_inside_accepted() {
    let ws = Ws::new();
    let elsewhere = outside();
    let target = elsewhere.path().join("x.txt");
    std::fs::write(&target, "secret\n").unwrap();
    let given = target.to_str().unwrap();
    assert_outside(&call(&Read, &ws.env, json!({"path": given})).await, given);
    assert_outside(
        &call(&Write, &ws.env, json!({"path": given, "content": "pwned"})).await,
        given,
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "secret\n");
    assert_outside(
        &call(&Read, &ws.env, json!({"path": "/etc/passwd"})).await,
        "/etc/passwd",
    );

    let inside = ws.file("in.txt", "mine\n");
    let result = call(&Read, &ws.env, json!({"path": inside.to_str().unwrap()})).await;
    assert_eq!(ok(&result), "1\tmine");
}

#[tokio::test]
async fn a_symlink_pointing_outside_is_refused_for_read_and_write() {
    let ws = Ws::new();
    let elsewhere = outside();
    let secret = elsewhere.path().join("secret.txt");
    std::fs::write(&secret, "secret\n").unwrap();
    ws.symlink("link.txt", &secret);
    ws.symlink("outdir", elsewhere.path());

    assert_outside(
        &call(&Read, &ws.env, json!({"path": "link.txt"})).await,
        "link.txt",
    );
    assert_outside(
        &call(&Write, &ws.env, json!({"path": "link.txt", "content": "pwned"})).await,
        "link.txt",
    );
    assert_outside(
        &call(
            &Edit,
            &ws.env,
            json!({"path": "link.txt", "old_string": "secret", "new_string": "x"}),
        )
        .await,
        "link.txt",
    );
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret\n");

    assert_outside(
        &call(&Read, &ws.env, json!({"path": "outdir/secret.txt"})).await,
        "outdir/secret.txt",
    );
    assert_outside(
        &call(&Write, &ws.env, json!({"path": "outdir/new.txt", "content": "x"})).await,
        "outdir/new.txt",
    );
    assert!(!elsewhere.path().join("new.txt").exists());
    assert_outside(
        &call(&ListDir, &ws.env, json!({"path": "outdir"})).await,
        "outdir",
    );
    assert_outside(
        &call(&Grep, &ws.env, json!({"pattern": "secret", "path": "outdir"})).await,
        "outdir",
    );
    assert_outside(
        &call(&Glob, &ws.env, json!({"pattern": "*", "path": "outdir"})).await,
        "outdir",
    );
}

#[tokio::test]
async fn a_dangling_symlink_pointing_outside_is_refused_for_write() {
    let ws = Ws::new();
    let elsewhere = outside();
    let target = elsewhere.path().join("created-by-write.txt");
    ws.symlink("dangling", &target);
    assert_outside(
        &call(&Write, &ws.env, json!({"path": "dangling", "content": "x"})).await,
        "dangling",
    );
    assert_outside(
        &call(
            &Write,
            &ws.env,
            json!({"path": "dangling/deeper.txt", "content": "x"}),
        )
        .await,
        "dangling/deeper.txt",
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn a_symlink_inside_is_followed() {
    let ws = Ws::new();
    ws.file("real/data.txt", "one\ntwo\n");
    ws.symlink("alias.txt", "real/data.txt");
    ws.symlink("realdir", "real");
    let result = call(&Read, &ws.env, json!({"path": "alias.txt"})).await;
    assert_eq!(ok(&result), "1\tone\n2\ttwo");
    let result = call(&Read, &ws.env, json!({"path": "realdir/data.txt"})).await;
    assert_eq!(ok(&result), "1\tone\n2\ttwo");

    // A write through an inside symlink lands on its target; the link stays a link.
    let result = call(&Write, &ws.env, json!({"path": "alias.txt", "content": "new\n"})).await;
    ok(&result);
    assert_eq!(ws.read("real/data.txt"), "new\n");
    assert!(
        std::fs::symlink_metadata(ws.path("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );

    // A dangling symlink inside: the write creates its target inside.
    ws.symlink("pending", "real/later.txt");
    ok(&call(&Write, &ws.env, json!({"path": "pending", "content": "later"})).await);
    assert_eq!(ws.read("real/later.txt"), "later");
}

#[tokio::test]
async fn the_walk_never_follows_a_symlink_out() {
    let ws = Ws::new();
    let elsewhere = outside();
    std::fs::write(elsewhere.path().join("secret.txt"), "needle outside\n").unwrap();
    ws.file("mine.txt", "needle inside\n");
    ws.symlink("outdir", elsewhere.path());
    ws.symlink("secret-link.txt", elsewhere.path().join("secret.txt"));
    let result = call(&Grep, &ws.env, json!({"pattern": "needle"})).await;
    assert_eq!(ok(&result), "mine.txt:1:needle inside");
}

#[tokio::test]
async fn a_symlink_loop_is_an_error_naming_the_path() {
    let ws = Ws::new();
    ws.symlink("loop-a", "loop-b");
    ws.symlink("loop-b", "loop-a");
    let text = err(&call(&Read, &ws.env, json!({"path": "loop-a"})).await).to_owned();
    assert!(text.contains("\"loop-a\""), "{text}");
}
