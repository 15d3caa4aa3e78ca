//! Tier resolution and the trust gate.

use std::path::{Path, PathBuf};

use adapter_skillfs::{
    FsSourceConfig, HostEnv, ProjectTrust, SkillsOptions, TierDir, load_skills, resolve_skill_dirs,
};
use engine_ports::{SkillOrigin, SkillSource as _};

use crate::support::write_valid;

fn env(home: Option<&str>, xdg: Option<&str>) -> HostEnv {
    HostEnv {
        cwd: PathBuf::from("/cwd"),
        home: home.map(PathBuf::from),
        xdg_config_home: xdg.map(PathBuf::from),
    }
}

fn paths(dirs: &[TierDir]) -> Vec<&Path> {
    dirs.iter().map(|d| d.path.as_path()).collect()
}

fn conventional(workspace: &str, trust: ProjectTrust) -> SkillsOptions {
    SkillsOptions {
        dirs: vec!["/explicit".into()],
        conventional: true,
        workspace: workspace.into(),
        trust,
    }
}

#[test]
fn explicit_dirs_and_partial_environments() {
    let none = resolve_skill_dirs(&SkillsOptions::default(), &env(Some("/home/u"), None));
    assert!(none.dirs.is_empty() && none.withheld.is_empty());

    let explicit = SkillsOptions {
        dirs: vec!["/one".into(), "".into(), "/two".into(), "rel".into()],
        ..SkillsOptions::default()
    };
    let resolved = resolve_skill_dirs(&explicit, &env(Some("/home/u"), None));
    assert_eq!(
        paths(&resolved.dirs),
        [Path::new("/one"), Path::new("/two"), Path::new("/cwd/rel")]
    );
    assert!(resolved.dirs.iter().all(|d| d.tier == SkillOrigin::Explicit));

    let no_workspace = SkillsOptions {
        conventional: true,
        trust: ProjectTrust::Trusted,
        ..SkillsOptions::default()
    };
    let resolved = resolve_skill_dirs(&no_workspace, &env(Some("/home/u"), None));
    assert_eq!(
        paths(&resolved.dirs),
        [
            Path::new("/home/u/.config/mecatl/skills"),
            Path::new("/home/u/.claude/skills")
        ]
    );
    assert!(resolved.dirs.iter().all(|d| d.tier == SkillOrigin::User));

    let homeless = SkillsOptions {
        workspace: "/srv/repo".into(),
        ..no_workspace
    };
    let resolved = resolve_skill_dirs(&homeless, &env(None, None));
    assert_eq!(
        paths(&resolved.dirs),
        [
            Path::new("/srv/repo/.mecatl/skills"),
            Path::new("/srv/repo/.claude/skills")
        ]
    );
    assert!(resolved.dirs.iter().all(|d| d.tier == SkillOrigin::Project));
}

#[test]
fn full_order() {
    let resolved = resolve_skill_dirs(
        &conventional("/srv/repo", ProjectTrust::Trusted),
        &env(Some("/home/u"), None),
    );
    assert_eq!(
        paths(&resolved.dirs),
        [
            Path::new("/explicit"),
            Path::new("/srv/repo/.mecatl/skills"),
            Path::new("/srv/repo/.claude/skills"),
            Path::new("/home/u/.config/mecatl/skills"),
            Path::new("/home/u/.claude/skills"),
        ]
    );
    let tiers: Vec<SkillOrigin> = resolved.dirs.iter().map(|d| d.tier).collect();
    use SkillOrigin::{Explicit, Project, User};
    assert_eq!(tiers, [Explicit, Project, Project, User, User]);
}

#[test]
fn xdg() {
    let options = conventional("/srv/repo", ProjectTrust::Trusted);
    let resolved = resolve_skill_dirs(&options, &env(Some("/home/u"), Some("/custom/xdg")));
    let found = paths(&resolved.dirs);
    assert!(found.contains(&Path::new("/custom/xdg/mecatl/skills")));
    assert!(!found.contains(&Path::new("/home/u/.config/mecatl/skills")));

    for ignored in ["relative/xdg", ""] {
        let resolved = resolve_skill_dirs(&options, &env(Some("/home/u"), Some(ignored)));
        assert!(
            paths(&resolved.dirs).contains(&Path::new("/home/u/.config/mecatl/skills")),
            "{ignored:?}"
        );
    }
    let resolved = resolve_skill_dirs(&options, &env(None, Some("/custom/xdg")));
    assert_eq!(
        paths(&resolved.dirs).last(),
        Some(&Path::new("/custom/xdg/mecatl/skills"))
    );
}

#[test]
fn an_untrusted_workspace_contributes_nothing() {
    let resolved = resolve_skill_dirs(
        &conventional("/srv/repo", ProjectTrust::Untrusted),
        &env(Some("/home/u"), Some("/custom/xdg")),
    );
    assert_eq!(
        paths(&resolved.dirs),
        [
            Path::new("/explicit"),
            Path::new("/custom/xdg/mecatl/skills"),
            Path::new("/home/u/.claude/skills")
        ]
    );
    assert_eq!(resolved.withheld.len(), 2);
}

#[tokio::test]
async fn a_project_skill_of_an_untrusted_workspace_is_absent_everywhere() {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("ws");
    let home = root.path().join("home");
    write_valid(&workspace.join(".mecatl/skills"), "project-only", "b");
    write_valid(&home.join(".claude/skills"), "user-skill", "b");
    let env = HostEnv {
        cwd: root.path().to_path_buf(),
        home: Some(home),
        xdg_config_home: None,
    };
    let options = |trust| SkillsOptions {
        dirs: Vec::new(),
        conventional: true,
        workspace: workspace.clone(),
        trust,
    };

    let untrusted = load_skills(&options(ProjectTrust::Untrusted), &env, FsSourceConfig::default());
    let source = untrusted.source.unwrap();
    let names: Vec<String> = source
        .list_skills()
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(names, ["user-skill"]);
    assert!(
        source
            .skill_body("project-only")
            .await
            .unwrap_err()
            .is_skill_not_found()
    );
    assert!(
        untrusted
            .diagnostics
            .iter()
            .any(|d| d.message.contains("withheld")),
        "{:?}",
        untrusted.diagnostics
    );

    let trusted = load_skills(&options(ProjectTrust::Trusted), &env, FsSourceConfig::default());
    let metas = trusted.source.unwrap().list_skills().await.unwrap();
    let origins: Vec<(&str, SkillOrigin)> = metas.iter().map(|m| (m.name.as_str(), m.origin)).collect();
    assert_eq!(
        origins,
        [
            ("project-only", SkillOrigin::Project),
            ("user-skill", SkillOrigin::User)
        ]
    );
    assert!(trusted.diagnostics.is_empty(), "{:?}", trusted.diagnostics);
}

#[test]
fn a_fatal_discovery_error_disables_skills_with_a_warning() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let options = SkillsOptions {
        dirs: vec![file],
        ..SkillsOptions::default()
    };
    let loaded = load_skills(&options, &env(None, None), FsSourceConfig::default());
    assert!(loaded.source.is_none());
    let last = loaded.diagnostics.last().unwrap();
    assert_eq!(last.level, engine_ports::Level::Warn);
    assert!(
        last.message.contains("disabled") && last.message.contains("not-a-dir"),
        "{}",
        last.message
    );
}
