//! `FsSource`: asset inventories and confined reads.

use std::path::Path;

use adapter_skillfs::{DirSource, FsBuild, FsSource, FsSourceConfig, MultiSource};
use engine_ports::{SkillOrigin, SkillSource as _, SkillSourceError};

use crate::support::{chmod, write_file, write_valid};

fn build(root: &Path) -> FsBuild {
    FsSource::build(&DirSource::new(root), FsSourceConfig::default()).unwrap()
}

fn asset_names(assets: &[engine_ports::SkillAsset]) -> Vec<&str> {
    assets.iter().map(|a| a.name.as_str()).collect()
}

#[tokio::test]
async fn symlinks_never_lead_out_of_a_skill() {
    let root = tempfile::tempdir().unwrap();
    let skills = root.path().join("skills");
    let guarded = write_valid(&skills, "guarded", "b");
    write_file(&guarded.join("notes.md"), "notes");
    write_file(&guarded.join("sub/SKILL.md"), "nested");
    write_file(&root.path().join("outside.txt"), "secret");
    std::os::unix::fs::symlink(root.path().join("outside.txt"), guarded.join("leak.txt")).unwrap();
    let refs = write_valid(&skills, "refs", "b");
    write_file(&refs.join("real/a.md"), "inside");
    std::os::unix::fs::symlink("real", refs.join("linked")).unwrap();
    std::os::unix::fs::symlink(root.path(), refs.join("up")).unwrap();

    let source = build(&skills).source;
    let assets = source.list_skill_assets("guarded").await.unwrap();
    assert_eq!(asset_names(&assets), ["notes.md", "sub/SKILL.md"]);
    for asset in ["leak.txt", "SKILL.md"] {
        let read = source.read_skill_asset("guarded", asset).await;
        assert!(
            read.as_ref().is_err_and(SkillSourceError::is_asset_not_found),
            "{asset}: {read:?}"
        );
    }
    assert_eq!(
        source.read_skill_asset("guarded", "sub/SKILL.md").await.unwrap(),
        b"nested"
    );

    assert_eq!(
        asset_names(&source.list_skill_assets("refs").await.unwrap()),
        ["real/a.md"]
    );
    for asset in ["linked/a.md", "up/outside.txt", "up/skills/refs/real/a.md"] {
        let read = source.read_skill_asset("refs", asset).await;
        assert!(
            read.as_ref().is_err_and(SkillSourceError::is_asset_not_found),
            "{asset}: {read:?}"
        );
    }
    assert_eq!(
        source.read_skill_asset("refs", "real/a.md").await.unwrap(),
        b"inside"
    );
}

#[tokio::test]
async fn a_sibling_symlinked_directory_is_not_readable() {
    let root = tempfile::tempdir().unwrap();
    let skills = root.path().join("skills");
    let dir = write_valid(&skills, "refs", "b");
    write_file(&skills.join("sibling/a.md"), "sibling");
    std::os::unix::fs::symlink("../sibling", dir.join("refs")).unwrap();
    let source = build(&skills).source;
    let read = source.read_skill_asset("refs", "refs/a.md").await;
    assert!(
        read.as_ref().is_err_and(SkillSourceError::is_asset_not_found),
        "{read:?}"
    );
}

#[tokio::test]
async fn non_regular_entries_are_neither_listed_nor_read() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_valid(root.path(), "odd", "b");
    write_file(&dir.join("plain.md"), "p");
    let fifo = dir.join("pipe");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    std::fs::create_dir(dir.join("empty-dir")).unwrap();
    let source = build(root.path()).source;
    assert_eq!(
        asset_names(&source.list_skill_assets("odd").await.unwrap()),
        ["plain.md"]
    );
    for asset in ["pipe", "empty-dir", "missing.md"] {
        let read = source.read_skill_asset("odd", asset).await;
        assert!(
            read.as_ref().is_err_and(SkillSourceError::is_asset_not_found),
            "{asset}: {read:?}"
        );
    }
}

#[tokio::test]
async fn an_oversized_asset_is_too_large_with_no_bytes() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_valid(root.path(), "big", "b");
    write_file(&dir.join("large.txt"), "x".repeat(25_001));
    write_file(&dir.join("limit.txt"), "x".repeat(25_000));
    let source = build(root.path()).source;
    let error = source.read_skill_asset("big", "large.txt").await.unwrap_err();
    assert!(
        matches!(
            error,
            SkillSourceError::TooLarge {
                size: 25_001,
                limit: 25_000,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("too large"), "{error}");
    assert_eq!(
        source.read_skill_asset("big", "limit.txt").await.unwrap().len(),
        25_000
    );
}

#[tokio::test]
async fn inventory_bounds_skip_the_skill_at_construction() {
    let root = tempfile::tempdir().unwrap();
    let crowded = write_valid(root.path(), "crowded", "b");
    for i in 0..1_025 {
        write_file(&crowded.join(format!("f/{i:04}.md")), "");
    }
    let at_limit = write_valid(root.path(), "at-limit", "b");
    for i in 0..1_024 {
        write_file(&at_limit.join(format!("{i:04}.md")), "");
    }
    let odd = write_valid(root.path(), "odd-name", "b");
    write_file(&odd.join("a\nb.md"), "x");
    write_valid(root.path(), "fine", "b");

    let built = build(root.path());
    let names: Vec<&str> = built.source.metas().iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["at-limit", "fine"]);
    assert_eq!(built.diagnostics.len(), 2, "{:?}", built.diagnostics);
    let crowded_diag = built
        .diagnostics
        .iter()
        .find(|d| d.path.ends_with("crowded"))
        .unwrap();
    assert!(crowded_diag.reason.contains("more than 1024"), "{crowded_diag}");
    let odd_diag = built
        .diagnostics
        .iter()
        .find(|d| d.path.ends_with("odd-name"))
        .unwrap();
    assert!(odd_diag.reason.contains("not a valid logical name"), "{odd_diag}");
    assert_eq!(
        built.source.list_skill_assets("at-limit").await.unwrap().len(),
        1_024
    );
}

#[tokio::test]
async fn the_name_total_bound_rejects_the_whole_list() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_valid(root.path(), "long-names", "b");
    for i in 0..200 {
        write_file(&dir.join(format!("{i:03}-{}.md", "n".repeat(160))), "");
    }
    let built = build(root.path());
    assert!(built.source.is_empty());
    assert!(
        built.diagnostics[0].reason.contains("32768 bytes"),
        "{}",
        built.diagnostics[0]
    );
}

#[tokio::test]
async fn inventories_are_lazy_and_a_vanished_skill_has_no_assets() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_valid(root.path(), "live", "b");
    write_file(&dir.join("a.md"), "a");
    chmod(&dir.join("a.md"), 0o755);
    let source = build(root.path()).source;
    assert!(source.metas()[0].has_assets);
    let first = source.list_skill_assets("live").await.unwrap();
    assert_eq!((first[0].size, first[0].executable), (1, true));
    write_file(&dir.join("b/c.md"), "cc");
    let second = source.list_skill_assets("live").await.unwrap();
    assert_eq!(asset_names(&second), ["a.md", "b/c.md"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(source.list_skill_assets("live").await.unwrap().is_empty());
    assert_eq!(
        &*source.skill_body("live").await.unwrap(),
        "b",
        "bodies stay in the snapshot"
    );
    let read = source.read_skill_asset("live", "a.md").await;
    assert!(
        read.as_ref().is_err_and(SkillSourceError::is_asset_not_found),
        "{read:?}"
    );
}

#[tokio::test]
async fn errors_are_path_free_and_origins_are_tiers() {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project");
    let explicit = root.path().join("explicit");
    let dir = write_valid(&project, "proj", "b");
    write_file(&dir.join("large.txt"), "x".repeat(25_001));
    write_file(&dir.join("ok.md"), "x");
    chmod(&dir.join("ok.md"), 0o000);
    write_valid(&explicit, "expl", "b");
    let sources = MultiSource::new(vec![
        Box::new(DirSource::new(&project).with_tier(SkillOrigin::Project)),
        Box::new(DirSource::new(&explicit)),
    ]);
    let source = FsSource::build(&sources, FsSourceConfig::default())
        .unwrap()
        .source;
    let origins: Vec<(String, SkillOrigin)> = source
        .metas()
        .iter()
        .map(|m| (m.name.clone(), m.origin))
        .collect();
    assert_eq!(
        origins,
        [
            ("expl".to_owned(), SkillOrigin::Explicit),
            ("proj".to_owned(), SkillOrigin::Project)
        ]
    );

    let root_text = root.path().display().to_string();
    let mut errors = vec![
        source.skill_body("nope").await.unwrap_err(),
        source.list_skill_assets("nope").await.unwrap_err(),
        source.read_skill_asset("proj", "large.txt").await.unwrap_err(),
        source.read_skill_asset("proj", "../x").await.unwrap_err(),
        source.read_skill_asset("proj", "missing.md").await.unwrap_err(),
        source.read_skill_asset("nope", "a.md").await.unwrap_err(),
    ];
    // Running as root, mode 000 does not stop the read; it still must not leak.
    if let Err(error) = source.read_skill_asset("proj", "ok.md").await {
        errors.push(error);
    }
    for error in errors {
        let text = error.to_string();
        assert!(!text.contains(&root_text), "{text}");
        assert!(!text.contains('/') || text.contains("\"../x\""), "{text}");
    }
}
