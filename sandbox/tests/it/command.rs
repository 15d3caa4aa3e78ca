//! `SandboxPolicy::prepare` + `Prepared::apply_to` on `std::process::Command`.

use std::process::Command;

use sandbox::{SandboxMode, SandboxPolicy, support};

fn landlock(test: &str) -> bool {
    test_peers::kernel_feature(test, "Landlock", support().landlock_abi.is_some())
}

#[test]
fn the_kernel_support_names_the_landlock_abi() {
    if !landlock("the_kernel_support_names_the_landlock_abi") {
        return;
    }
    let kernel = support();
    assert!(kernel.landlock_abi.is_some_and(|abi| abi >= 1));
    assert!(
        kernel.describe().starts_with("Landlock ABI "),
        "{}",
        kernel.describe()
    );
    assert_eq!(support(), kernel, "probed once, the same answer");
}

#[test]
fn a_prepared_std_command_writes_only_its_writable_roots() {
    if !landlock("a_prepared_std_command_writes_only_its_writable_roots") {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let workspace = base.path().join("ws");
    let temp = base.path().join("tmp");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::create_dir(&temp).unwrap();
    let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, true, Vec::new());
    let run = |script: &str| {
        let mut command = Command::new("/bin/sh");
        command.arg("-c").arg(script).current_dir(&workspace);
        policy.prepare(&workspace, &temp).unwrap().apply_to(&mut command);
        command.status().unwrap().success()
    };
    assert!(run("echo a > in.txt && echo b > ../tmp/t.txt"));
    assert!(!run("echo c > ../out.txt"));
    assert!(!base.path().join("out.txt").exists());
    // The parent is not confined by preparing or applying.
    std::fs::write(base.path().join("parent.txt"), "ok").unwrap();
}

#[test]
fn off_prepares_nothing() {
    let base = tempfile::tempdir().unwrap();
    let prepared = SandboxPolicy::new(SandboxMode::Off, true, Vec::new())
        .prepare(base.path(), base.path())
        .unwrap();
    assert!(!prepared.confines());
}
