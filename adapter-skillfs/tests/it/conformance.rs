//! `FsSource` runs the `SkillSource` conformance suite, and
//! `FileCommandSource` the `CommandSource` one.

use std::sync::Arc;

use adapter_skillfs::{DirSource, FileCommandSource, FsSource, FsSourceConfig};
use engine_ports::testkit::{command_source, skill_source};

use crate::support::{chmod, write_file};

#[tokio::test]
async fn the_fs_source_passes_the_skill_source_suite() {
    skill_source::run(|fixture| {
        let root = tempfile::tempdir().unwrap();
        for skill in fixture {
            let dir = root.path().join(&skill.name);
            write_file(&dir.join("SKILL.md"), skill.skill_md());
            for asset in &skill.assets {
                let path = dir.join(&asset.name);
                write_file(&path, &asset.content);
                chmod(&path, if asset.executable { 0o755 } else { 0o644 });
            }
        }
        let built = FsSource::build(&DirSource::new(root.path()), FsSourceConfig::default()).unwrap();
        assert!(built.diagnostics.is_empty(), "{:?}", built.diagnostics);
        skill_source::SourceUnderTest {
            source: Arc::new(built.source),
            guard: Box::new(root),
        }
    })
    .await;
}

#[tokio::test]
async fn file_commands_pass_the_command_source_suite() {
    command_source::run(|fixture| {
        let root = tempfile::tempdir().unwrap();
        for command in fixture {
            write_file(
                &root.path().join(format!("{}.md", command.name)),
                command.template,
            );
        }
        command_source::CommandSourceUnderTest {
            source: Arc::new(FileCommandSource::from_dirs(vec![root.path().to_path_buf()])),
            guard: Box::new(root),
        }
    })
    .await;
}
