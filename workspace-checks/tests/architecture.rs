//! Dependency direction and repository conventions, checked on the real workspace,
//! and the rules of the container image and the Kubernetes example.

use std::collections::BTreeSet;

use workspace_checks::deploy::{dockerfile_problems, kubernetes_problems, routed_paths};
use workspace_checks::{
    Declared, DepKind, Edge, Workspace, arrow_violations, load_workspace, names_crate, opens_with_module_doc,
    repo_root, rust_files, unused_dependencies,
};

#[test]
fn dependency_arrows_point_inward() {
    let workspace = load_workspace(&repo_root()).expect("cargo metadata");
    for expected in ["engine-ports", "engine-core"] {
        assert!(workspace.members.contains(expected), "missing member {expected}");
    }
    let violations = arrow_violations(&workspace);
    assert!(
        violations.is_empty(),
        "dependency rules broken:\n{}",
        violations.join("\n")
    );
}

#[test]
fn engine_ports_pulls_no_transport_crate() {
    let workspace = load_workspace(&repo_root()).expect("cargo metadata");
    let closure = workspace
        .closures
        .get("engine-ports")
        .expect("engine-ports closure");
    assert!(
        closure.contains("serde"),
        "the closure walk must see third-party crates"
    );
    for banned in workspace_checks::BANNED_FROM_PORTS {
        assert!(!closure.contains(*banned), "engine-ports pulls {banned}");
    }
}

fn members(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

fn edge(from: &str, to: &str, kind: DepKind) -> Edge {
    Edge {
        from: from.to_owned(),
        to: to.to_owned(),
        kind,
    }
}

#[test]
fn wrong_arrows_are_reported() {
    let all = members(&[
        "engine-ports",
        "engine-core",
        "adapter-jsonlstore",
        "adapter-mcp",
        "adapter-acp",
        "adapter-http",
        "adapter-telemetry",
        "app",
        "test-peers",
    ]);
    let cases = [
        // A face never depends on a driven adapter, on another face or on the root.
        (
            edge("adapter-http", "adapter-mcp", DepKind::Normal),
            "adapter-http",
        ),
        (
            edge("adapter-http", "adapter-acp", DepKind::Normal),
            "adapter-http",
        ),
        (edge("adapter-acp", "app", DepKind::Normal), "adapter-acp"),
        (
            edge("engine-ports", "engine-core", DepKind::Normal),
            "engine-ports",
        ),
        (edge("engine-core", "adapter-mcp", DepKind::Normal), "engine-core"),
        (
            edge("adapter-jsonlstore", "engine-core", DepKind::Normal),
            "adapter-jsonlstore",
        ),
        (edge("adapter-mcp", "app", DepKind::Dev), "adapter-mcp"),
        (
            edge("adapter-mcp", "adapter-jsonlstore", DepKind::Normal),
            "adapter-mcp",
        ),
        (edge("test-peers", "engine-ports", DepKind::Normal), "test-peers"),
        // A face reaches the telemetry only through a callback the root hands in.
        (
            edge("adapter-http", "adapter-telemetry", DepKind::Normal),
            "adapter-http",
        ),
        (
            edge("adapter-telemetry", "adapter-jsonlstore", DepKind::Normal),
            "adapter-telemetry",
        ),
    ];
    for (bad, from) in cases {
        let workspace = Workspace {
            members: all.clone(),
            edges: vec![bad.clone()],
            closures: Default::default(),
            declared: Default::default(),
        };
        let violations = arrow_violations(&workspace);
        assert_eq!(
            violations.len(),
            1,
            "{bad:?} must be reported once: {violations:?}"
        );
        assert!(violations[0].contains(from), "{violations:?}");
    }
    let fine = Workspace {
        members: all.clone(),
        edges: vec![
            edge("engine-core", "engine-ports", DepKind::Normal),
            edge("adapter-mcp", "engine-core", DepKind::Normal),
            edge("adapter-mcp", "test-peers", DepKind::Dev),
            edge("app", "adapter-mcp", DepKind::Normal),
            edge("adapter-acp", "engine-core", DepKind::Normal),
            edge("app", "adapter-http", DepKind::Normal),
        ],
        closures: Default::default(),
        declared: Default::default(),
    };
    assert!(arrow_violations(&fine).is_empty());
}

#[test]
fn unknown_crates_and_banned_pulls_are_reported() {
    let mut workspace = Workspace {
        members: members(&["engine-ports", "mystery"]),
        edges: Vec::new(),
        closures: Default::default(),
        declared: Default::default(),
    };
    workspace
        .closures
        .insert("engine-ports".to_owned(), members(&["serde", "reqwest"]));
    let violations = arrow_violations(&workspace);
    assert!(violations.iter().any(|v| v.contains("mystery")), "{violations:?}");
    assert!(violations.iter().any(|v| v.contains("reqwest")), "{violations:?}");
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let files = rust_files(&repo_root());
    assert!(files.len() > 10, "the walk found too few files: {files:?}");
    let missing: Vec<String> = files
        .iter()
        .filter(|path| {
            let source = std::fs::read_to_string(path).unwrap_or_default();
            !opens_with_module_doc(&source)
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a leading `//!` line:\n{}",
        missing.join("\n")
    );
    assert!(opens_with_module_doc("//! doc\nfn x() {}"));
    assert!(opens_with_module_doc("#![allow(x)]\n\n//! doc"));
    assert!(!opens_with_module_doc("use std::fs;\n//! late"));
}

#[test]
fn no_profile_aborts_on_panic() {
    // D2: a tool's panic is contained by the dispatcher; `panic = "abort"` would kill
    // the process instead.
    let manifest = std::fs::read_to_string(repo_root().join("Cargo.toml")).expect("root manifest");
    let compact: String = manifest.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(
        !compact.contains("panic=\"abort\""),
        "the workspace must not set panic = \"abort\""
    );
}

#[test]
fn every_declared_dependency_is_named_in_its_crate() {
    let workspace = load_workspace(&repo_root()).expect("cargo metadata");
    assert!(workspace.declared.len() >= 8, "{:?}", workspace.declared.keys());
    let mut unused = Vec::new();
    for (member, declared) in &workspace.declared {
        let sources: Vec<String> = rust_files(&declared.dir)
            .iter()
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .collect();
        assert!(
            !sources.is_empty(),
            "{member}: no Rust file under {:?}",
            declared.dir
        );
        unused.extend(unused_dependencies(member, declared, &sources));
    }
    assert!(unused.is_empty(), "unused dependencies:\n{}", unused.join("\n"));
}

#[test]
fn an_unnamed_dependency_is_reported_and_every_way_of_naming_counts() {
    for named in [
        "use serde_json::Value;",
        "let v = serde_json::json!({});",
        "#[serde_json::x]",
        "use serde_json;",
        "use serde_json as json;",
        "extern crate serde_json;",
    ] {
        assert!(names_crate(named, "serde_json"), "{named}");
    }
    for not_named in [
        "use my_serde_json::x;",
        "serde_json_ext::x",
        "// serde_json is nice",
        "serde_jsonx::y",
    ] {
        assert!(!names_crate(not_named, "serde_json"), "{not_named}");
    }
    let declared = Declared {
        dir: Default::default(),
        deps: vec![
            ("tokio".to_owned(), DepKind::Normal),
            ("walkdir".to_owned(), DepKind::Dev),
        ],
        ignored: BTreeSet::new(),
    };
    let unused = unused_dependencies("demo", &declared, &["#[tokio::test]\nasync fn t() {}".to_owned()]);
    assert_eq!(unused.len(), 1, "{unused:?}");
    assert!(unused[0].contains("`walkdir`"), "{unused:?}");
}

#[test]
fn the_container_image_runs_as_a_non_root_user_with_a_health_check() {
    let dockerfile = std::fs::read_to_string(repo_root().join("Dockerfile")).expect("Dockerfile");
    assert_eq!(dockerfile_problems(&dockerfile), Vec::<String>::new());
    assert!(
        dockerfile.contains("\"healthcheck\""),
        "the health check is the binary's own subcommand"
    );
    let broken = "FROM rust AS build\nRUN cargo build\nFROM debian\nUSER root\n";
    let problems = dockerfile_problems(broken);
    assert!(problems.iter().any(|p| p.contains("\"root\"")), "{problems:?}");
    assert!(problems.iter().any(|p| p.contains("HEALTHCHECK")), "{problems:?}");
    let single = "FROM debian\nHEALTHCHECK \\\n  CMD [\"true\"]\n";
    let problems = dockerfile_problems(single);
    assert!(problems.iter().any(|p| p.contains("multi-stage")), "{problems:?}");
    assert!(problems.iter().any(|p| p.contains("no USER")), "{problems:?}");
    assert!(
        !problems.iter().any(|p| p.contains("HEALTHCHECK")),
        "{problems:?}"
    );
}

#[test]
fn the_kubernetes_example_probes_routed_paths_and_reads_only_defined_secret_keys() {
    let router = std::fs::read_to_string(repo_root().join("adapter-http/src/server.rs")).expect("router");
    let routes = routed_paths(&router);
    assert!(
        routes.contains("/readyz") && routes.contains("/healthz"),
        "{routes:?}"
    );
    let manifest =
        std::fs::read_to_string(repo_root().join("deploy/kubernetes/mecated.yaml")).expect("manifest");
    assert_eq!(kubernetes_problems(&manifest, &routes), Vec::<String>::new());

    let unrouted = manifest.replace("path: /readyz", "path: /ready");
    let problems = kubernetes_problems(&unrouted, &routes);
    assert!(
        problems.iter().any(|p| p.contains("\"/ready\" is not routed")),
        "{problems:?}"
    );
    let missing_key = manifest.replace("key: pg-password", "key: pg-pass");
    let problems = kubernetes_problems(&missing_key, &routes);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("PGPASSWORD") && p.contains("\"pg-pass\"")),
        "{problems:?}"
    );
    let one = manifest.replace("replicas: 2", "replicas: 1");
    assert!(
        kubernetes_problems(&one, &routes)
            .iter()
            .any(|p| p.contains("2 replicas"))
    );
    let root = manifest.replace("runAsNonRoot: true", "runAsNonRoot: false");
    assert!(
        kubernetes_problems(&root, &routes)
            .iter()
            .any(|p| p.contains("runAsNonRoot"))
    );
    assert!(kubernetes_problems("a: [", &routes)[0].contains("does not parse"));
}
