//! `DirSource` and `MultiSource`.

use std::path::PathBuf;
use std::sync::Arc;

use adapter_skillfs::{
    DirSource, Discover, DiscoveredSkill, Discovery, DiscoveryError, DiscoveryFailure,
    MAX_DEFINITION_FILE_BYTES, MultiSource, SkipDiagnostic,
};
use engine_ports::SkillMeta;

use crate::support::{
    discover, mkfifo, names, skill_md, within_ten_seconds, write_file, write_skill, write_valid,
};

#[test]
fn basic_discovery() {
    let root = tempfile::tempdir().unwrap();
    write_skill(
        root.path(),
        "commit-style",
        &skill_md(
            "commit-style",
            "How to write commits.",
            "",
            "# Commit style\n\nImperative mood.",
        ),
    );
    write_valid(root.path(), "review", "Review carefully.");
    let found = discover(root.path());
    assert_eq!(names(&found), ["commit-style", "review"]);
    assert!(found.diagnostics.is_empty(), "{:?}", found.diagnostics);
    assert!(found.skills[0].body.starts_with("# Commit style"));
}

#[test]
fn missing_directories_and_a_file_in_place_of_one() {
    let root = tempfile::tempdir().unwrap();
    for dir in [root.path().join("nope"), PathBuf::from(""), PathBuf::from("  ")] {
        let found = DirSource::new(&dir).discover().unwrap();
        assert!(found.skills.is_empty() && found.diagnostics.is_empty(), "{dir:?}");
    }
    let file = root.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let failure = DirSource::new(&file).discover().unwrap_err();
    assert!(matches!(failure.error, DiscoveryError::UnreadableDir { .. }));
    assert!(
        failure.to_string().contains(&file.display().to_string()),
        "{failure}"
    );
}

#[test]
fn broken_skills_are_skipped_with_one_diagnostic_each() {
    let root = tempfile::tempdir().unwrap();
    write_valid(root.path(), "good", "ok");
    write_skill(root.path(), "no-frontmatter", "just text\n");
    write_skill(root.path(), "no-name", "---\ndescription: d\n---\nbody\n");
    write_skill(
        root.path(),
        "unterminated",
        "---\nname: unterminated\ndescription: d\nbody\n",
    );
    write_skill(
        root.path(),
        "unclosed",
        "---\nname: [unclosed\ndescription: d\n---\nbody\n",
    );
    let found = discover(root.path());
    assert_eq!(names(&found), ["good"]);
    assert_eq!(found.diagnostics.len(), 4, "{:?}", found.diagnostics);
    for diagnostic in &found.diagnostics {
        assert!(diagnostic.path.starts_with(root.path()), "{diagnostic}");
        assert!(diagnostic.reason.contains("skipped"), "{diagnostic}");
    }
}

#[test]
fn invalid_and_mismatched_names() {
    let root = tempfile::tempdir().unwrap();
    write_skill(root.path(), "Bad Name", &skill_md("Bad Name", "d", "", "b"));
    write_skill(root.path(), "bar", &skill_md("foo", "d", "", "b"));
    write_valid(root.path(), "baz", "b");
    let found = discover(root.path());
    assert_eq!(names(&found), ["baz"]);
    assert_eq!(found.diagnostics.len(), 2);
    let bad = found
        .diagnostics
        .iter()
        .find(|d| d.path.starts_with(root.path().join("Bad Name")))
        .unwrap();
    assert!(bad.reason.contains("invalid"), "{bad}");
    let mismatch = found
        .diagnostics
        .iter()
        .find(|d| d.path.starts_with(root.path().join("bar")))
        .unwrap();
    assert!(
        mismatch.reason.contains("\"foo\"") && mismatch.reason.contains("\"bar\""),
        "{mismatch}"
    );
}

#[test]
fn underscore_names_and_ignored_entries() {
    let root = tempfile::tempdir().unwrap();
    write_valid(root.path(), "my_skill", "b");
    std::fs::create_dir(root.path().join("no-manifest")).unwrap();
    write_file(&root.path().join("no-manifest/notes.md"), "x");
    write_file(&root.path().join("README.md"), "# skills");
    let found = discover(root.path());
    assert_eq!(names(&found), ["my_skill"]);
    assert!(found.diagnostics.is_empty(), "{:?}", found.diagnostics);
}

#[test]
fn symlinked_skill_directories_are_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let skills = root.path().join("skills");
    std::fs::create_dir(&skills).unwrap();
    write_valid(&root.path().join("elsewhere"), "linked", "b");
    std::os::unix::fs::symlink("../elsewhere/linked", skills.join("linked")).unwrap();
    let found = discover(&skills);
    assert!(found.skills.is_empty());
    assert_eq!(found.diagnostics.len(), 1);
    assert!(
        found.diagnostics[0].reason.contains("symlink"),
        "{}",
        found.diagnostics[0]
    );
    assert_eq!(
        found.diagnostics[0].to_diagnostic().level,
        engine_ports::Level::Warn
    );
}

#[test]
fn a_symlinked_skill_md_is_skipped_with_a_diagnostic_and_its_body_never_loaded() {
    let root = tempfile::tempdir().unwrap();
    let skills = root.path().join("skills");
    std::fs::create_dir_all(skills.join("linked-file")).unwrap();
    write_valid(&skills, "kept", "b");
    let outside = root.path().join("outside.md");
    write_file(&outside, skill_md("linked-file", "d", "", "SECRET-OUTSIDE-BODY"));
    let manifest = skills.join("linked-file/SKILL.md");
    std::os::unix::fs::symlink(&outside, &manifest).unwrap();

    let found = discover(&skills);
    assert_eq!(names(&found), ["kept"]);
    assert!(found.skills.iter().all(|s| !s.body.contains("SECRET")));
    assert_eq!(found.diagnostics.len(), 1, "{:?}", found.diagnostics);
    assert_eq!(found.diagnostics[0].path, manifest);
    assert!(
        found.diagnostics[0].reason.contains("skill skipped")
            && found.diagnostics[0].reason.contains("symbolic link"),
        "{}",
        found.diagnostics[0]
    );
}

#[test]
fn a_fifo_skill_md_is_skipped_promptly_with_a_diagnostic() {
    let root = tempfile::tempdir().unwrap();
    write_valid(root.path(), "kept", "b");
    let manifest = root.path().join("piped/SKILL.md");
    mkfifo(&manifest);

    let dir = root.path().to_path_buf();
    let found = within_ten_seconds(move || discover(&dir));
    assert_eq!(names(&found), ["kept"]);
    assert_eq!(found.diagnostics.len(), 1, "{:?}", found.diagnostics);
    assert_eq!(found.diagnostics[0].path, manifest);
    assert!(
        found.diagnostics[0].reason.contains("not a regular file"),
        "{}",
        found.diagnostics[0]
    );
}

#[test]
fn an_oversize_skill_md_is_skipped_with_a_diagnostic_naming_the_limit() {
    let root = tempfile::tempdir().unwrap();
    write_valid(root.path(), "kept", "b");
    let huge = write_valid(root.path(), "huge", "b").join("SKILL.md");
    // A valid skill padded (sparsely) past the limit: it must not be read at all.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&huge)
        .unwrap()
        .set_len(MAX_DEFINITION_FILE_BYTES * 64)
        .unwrap();

    let found = discover(root.path());
    assert_eq!(names(&found), ["kept"]);
    assert_eq!(found.diagnostics.len(), 1, "{:?}", found.diagnostics);
    assert_eq!(found.diagnostics[0].path, huge);
    assert!(
        found.diagnostics[0]
            .reason
            .contains(&format!("over {MAX_DEFINITION_FILE_BYTES} bytes")),
        "{}",
        found.diagnostics[0]
    );
}

#[test]
fn a_skill_md_exactly_at_the_size_limit_is_read() {
    let root = tempfile::tempdir().unwrap();
    let text = skill_md("edge", "d", "", "b");
    let padding = usize::try_from(MAX_DEFINITION_FILE_BYTES).unwrap() - text.len();
    write_skill(root.path(), "edge", &format!("{text}{}", " ".repeat(padding)));
    let found = discover(root.path());
    assert_eq!(names(&found), ["edge"], "{:?}", found.diagnostics);
}

/// A source that yields fixed skills, or fails.
struct Fixed {
    skills: Vec<(&'static str, &'static str, &'static str)>,
    diagnostics: Vec<SkipDiagnostic>,
    fail: bool,
}

impl Fixed {
    fn new(skills: &[(&'static str, &'static str, &'static str)]) -> Box<Self> {
        Box::new(Self {
            skills: skills.to_vec(),
            diagnostics: Vec::new(),
            fail: false,
        })
    }
}

impl Discover for Fixed {
    fn discover(&self) -> Result<Discovery, DiscoveryFailure> {
        if self.fail {
            return Err(DiscoveryFailure {
                error: DiscoveryError::UnreadableDir {
                    dir: "/broken".into(),
                    kind: std::io::ErrorKind::PermissionDenied,
                },
                diagnostics: self.diagnostics.clone(),
            });
        }
        Ok(Discovery {
            skills: self
                .skills
                .iter()
                .map(|(name, description, dir)| DiscoveredSkill {
                    meta: SkillMeta {
                        name: (*name).into(),
                        description: (*description).into(),
                        ..SkillMeta::default()
                    },
                    body: Arc::from("body"),
                    dir: PathBuf::from(dir),
                })
                .collect(),
            diagnostics: self.diagnostics.clone(),
        })
    }
}

#[test]
fn multi_source_order_and_shadowing() {
    let multi = MultiSource::new(vec![Fixed::new(&[("b", "b", "/x/b"), ("a", "a", "/x/a")])]);
    let found = multi.discover().unwrap();
    assert_eq!(names(&found), ["a", "b"]);

    let multi = MultiSource::new(vec![
        Fixed::new(&[("dup", "high", "/high/dup")]),
        Fixed::new(&[("dup", "low", "/low/dup")]),
    ]);
    let found = multi.discover().unwrap();
    assert_eq!(found.skills.len(), 1);
    assert_eq!(found.skills[0].dir, PathBuf::from("/high/dup"));
    assert_eq!(found.diagnostics.len(), 1);
    let shadowed = &found.diagnostics[0];
    assert_eq!(shadowed.path, PathBuf::from("/low/dup"));
    assert!(
        shadowed.reason.contains("shadowed") && shadowed.reason.contains("/high/dup"),
        "{shadowed}"
    );
}

#[test]
fn the_earlier_source_wins_and_a_later_fatal_error_aborts() {
    let mut first = Fixed::new(&[("dup", "first", "/one/dup")]);
    first.diagnostics = vec![SkipDiagnostic::new("/one/x", "first note")];
    let mut second = Fixed::new(&[("dup", "second", "/two/dup")]);
    second.diagnostics = vec![SkipDiagnostic::new("/two/x", "second note")];
    let found = MultiSource::new(vec![first, second]).discover().unwrap();
    assert_eq!(found.skills[0].meta.description, "first");
    let reasons: Vec<&str> = found.diagnostics.iter().map(|d| d.reason.as_str()).collect();
    assert_eq!(reasons[..2], ["first note", "second note"]);
    assert!(reasons[2].contains("shadowed"));

    let mut broken = Fixed::new(&[]);
    broken.fail = true;
    broken.diagnostics = vec![SkipDiagnostic::new("/broken/y", "before failing")];
    let good = Fixed::new(&[("a", "a", "/one/a")]);
    let mut noted = Fixed::new(&[]);
    noted.diagnostics = vec![SkipDiagnostic::new("/one/n", "noted")];
    let failure = MultiSource::new(vec![good, noted, broken])
        .discover()
        .unwrap_err();
    assert!(matches!(
        failure.error,
        DiscoveryError::UnreadableDir {
            kind: std::io::ErrorKind::PermissionDenied,
            ..
        }
    ));
    let reasons: Vec<&str> = failure.diagnostics.iter().map(|d| d.reason.as_str()).collect();
    assert_eq!(reasons, ["noted", "before failing"]);
}
