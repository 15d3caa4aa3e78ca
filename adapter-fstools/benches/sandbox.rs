//! Cost of the sandbox on a `Shell` call: `ShellRunner::run("true")` in a temporary
//! workspace, unconfined and confined, so the difference is what Landlock (building
//! the ruleset in the parent, restricting the child before `exec`) and the seccomp
//! network filter add to one call.
//!
//! - `sandbox/true/off`: unconfined (today's behaviour, `--sandbox off`).
//! - `sandbox/true/workspace-write`: the default mode.
//! - `sandbox/true/workspace-write-network-off`: plus the seccomp filter.
//! - `sandbox/true/deny-read`: plus one `--sandbox-deny-read` path (`$HOME/.ssh`, or
//!   a directory under the temp directory): the walk from `/` grants its siblings.
//! - `sandbox/prepare/{workspace-write,deny-read}`: the parent's part alone
//!   (`SandboxPolicy::prepare`: the ruleset and its rules), without a process.
//!
//! A line on stdout names the kernel's support (`sandbox probe: …`); without Landlock
//! the confined rows measure refusals and say so.

// A benchmark program: a broken setup is fatal.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, clippy::print_stdout)]

use std::time::Duration;

use adapter_fstools::ShellRunner;
use criterion::Criterion;
use engine_core::CommandRunner as _;
use engine_ports::CancellationToken;
use sandbox::{SandboxMode, SandboxPolicy, SandboxSettings, support};

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let kernel = support();
    println!("sandbox probe: {}", kernel.describe());
    let scratch = tempfile::tempdir().unwrap();
    let workspace = scratch.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let denied = std::env::var_os("HOME")
        .map(|home| std::path::PathBuf::from(home).join(".ssh"))
        .filter(|path| path.is_dir())
        .unwrap_or_else(|| {
            let path = scratch.path().join("secret");
            std::fs::create_dir(&path).unwrap();
            path
        })
        .canonicalize()
        .unwrap();
    let runner = |settings: SandboxSettings| {
        let (confinement, _) = settings.for_session(&kernel);
        ShellRunner::default().with_confinement(confinement).unwrap()
    };
    let explicit = SandboxSettings::default().with_mode(SandboxMode::WorkspaceWrite);
    let policies = [
        (
            "workspace-write",
            SandboxPolicy::new(SandboxMode::WorkspaceWrite, true, Vec::new()),
        ),
        (
            "deny-read",
            SandboxPolicy::new(SandboxMode::WorkspaceWrite, true, vec![denied.clone()]),
        ),
    ];
    let runners = [
        (
            "off",
            runner(SandboxSettings::default().with_mode(SandboxMode::Off)),
        ),
        ("workspace-write", runner(explicit.clone())),
        (
            "workspace-write-network-off",
            runner(explicit.clone().with_network(false)),
        ),
        ("deny-read", runner(explicit.with_deny_read(vec![denied]))),
    ];
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("sandbox/true");
    group.sample_size(30);
    for (name, runner) in &runners {
        group.bench_function(*name, |b| {
            b.to_async(&runtime).iter(|| async {
                let ran = runner
                    .run(
                        "true",
                        &workspace,
                        Duration::from_secs(10),
                        CancellationToken::new(),
                    )
                    .await;
                if let Ok(output) = ran {
                    assert_eq!(output.exit_code, Some(0), "{}", output.output);
                }
            });
        });
    }
    group.finish();
    if kernel.landlock_abi.is_some() {
        let mut group = criterion.benchmark_group("sandbox/prepare");
        for (name, policy) in &policies {
            group.bench_function(*name, |b| {
                b.iter(|| policy.prepare(&workspace, scratch.path()).unwrap());
            });
        }
        group.finish();
    }
    criterion.final_summary();
}
