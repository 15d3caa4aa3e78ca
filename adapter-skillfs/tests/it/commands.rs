//! File-backed slash commands (scenarios 59–61, file side).

use std::path::{Path, PathBuf};

use adapter_skillfs::{CommandDirsOptions, FileCommandSource, HostEnv, ProjectTrust};
use engine_ports::testkit::MemoryCommandSource;
use engine_ports::{CommandBody, CommandError, CommandSource as _, Level};

use crate::support::write_file;

fn source(
    workspace: &Path,
    commands_dir: Option<PathBuf>,
    trust: ProjectTrust,
) -> (FileCommandSource, Vec<engine_ports::Diagnostic>) {
    let options = CommandDirsOptions {
        commands_dir,
        workspace: workspace.to_path_buf(),
        trust,
    };
    FileCommandSource::new(&options, &HostEnv::default())
}

fn body(text: &str) -> Option<CommandBody> {
    Some(CommandBody {
        body: text.to_owned(),
        post: String::new(),
    })
}

#[tokio::test]
async fn scenario_59_project_commands_need_a_trusted_workspace() {
    let ws = tempfile::tempdir().unwrap();
    write_file(&ws.path().join(".claude/commands/hi.md"), "Hello $ARGUMENTS");

    let (trusted, diagnostics) = source(ws.path(), None, ProjectTrust::Trusted);
    assert!(diagnostics.is_empty());
    assert_eq!(trusted.command_body("hi").await, Ok(body("Hello $ARGUMENTS")));

    let (untrusted, diagnostics) = source(ws.path(), None, ProjectTrust::Untrusted);
    assert_eq!(untrusted.command_body("hi").await, Ok(None));
    assert!(untrusted.list_commands().await.unwrap().is_empty());
    assert_eq!(
        diagnostics.len(),
        1,
        "only the existing withheld dir: {diagnostics:?}"
    );
    assert_eq!(diagnostics[0].level, Level::Warn);
    assert!(
        diagnostics[0].message.contains("withheld") && diagnostics[0].message.contains(".claude/commands"),
        "{}",
        diagnostics[0].message
    );
}

#[tokio::test]
async fn the_commands_dir_is_used_whatever_the_trust() {
    let ws = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_file(&dir.path().join("op.md"), "operator $1");
    write_file(&ws.path().join(".mecatl/commands/op.md"), "project $1");
    let (untrusted, _) = source(ws.path(), Some(dir.path().to_path_buf()), ProjectTrust::Untrusted);
    assert_eq!(untrusted.command_body("op").await, Ok(body("operator $1")));
    let (trusted, _) = source(ws.path(), Some(dir.path().to_path_buf()), ProjectTrust::Trusted);
    assert_eq!(
        trusted.command_body("op").await,
        Ok(body("operator $1")),
        "the commands dir comes first"
    );
    assert_eq!(trusted.dirs().len(), 3);
}

#[tokio::test]
async fn scenario_60_listing_descriptions_and_first_dir_wins() {
    let ws = tempfile::tempdir().unwrap();
    let mecatl = ws.path().join(".mecatl/commands");
    let claude = ws.path().join(".claude/commands");
    write_file(
        &mecatl.join("review.md"),
        "---\ndescription: Review a pull request\n---\nReview $1.\n",
    );
    write_file(
        &claude.join("fix.md"),
        "Fix the failing test in $1\nthen rerun.\n",
    );
    write_file(&mecatl.join("dup.md"), "---\ndescription: from mecatl\n---\nM\n");
    write_file(&claude.join("dup.md"), "---\ndescription: from claude\n---\nC\n");
    write_file(&claude.join("bad name.md"), "ignored: invalid command name");
    write_file(&claude.join("notes.txt"), "ignored: not .md");
    write_file(&claude.join("latin1.md"), [0xE9u8, 0x0A]);

    let (commands, _) = source(ws.path(), None, ProjectTrust::Trusted);
    let listed: Vec<(String, String)> = commands
        .list_commands()
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.name, c.description))
        .collect();
    let expected = [
        ("dup", "from mecatl"),
        ("fix", "Fix the failing test in $1"),
        ("review", "Review a pull request"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(n, d)| ((*n).to_owned(), (*d).to_owned()))
        .collect();
    assert_eq!(listed, expected);
    assert_eq!(
        commands.command_body("dup").await,
        Ok(body("---\ndescription: from mecatl\n---\nM\n"))
    );
}

#[tokio::test]
async fn files_are_read_again_on_every_call_and_faults_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let commands = FileCommandSource::from_dirs(vec![dir.path().to_path_buf()]);
    assert_eq!(commands.command_body("later").await, Ok(None));
    write_file(&dir.path().join("later.md"), "v1");
    assert_eq!(commands.command_body("later").await, Ok(body("v1")));
    write_file(&dir.path().join("later.md"), "v2");
    assert_eq!(commands.command_body("later").await, Ok(body("v2")));
    assert_eq!(commands.list_commands().await.unwrap().len(), 1);

    std::fs::create_dir(dir.path().join("folder.md")).unwrap();
    let error = commands.command_body("folder").await.unwrap_err();
    let CommandError::Expand { command, reason } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(command, "folder");
    assert!(!reason.contains(&dir.path().display().to_string()), "{reason}");

    write_file(&dir.path().join("binary.md"), [0xFFu8, 0xFE]);
    assert!(commands.command_body("binary").await.is_err());
    for name in ["", "a b", "../later", "x/y"] {
        assert_eq!(commands.command_body(name).await, Ok(None), "{name:?}");
    }
}

#[tokio::test]
async fn scenario_61_file_bodies_equal_in_memory_bodies_byte_for_byte() {
    let templates = [
        (
            "review",
            "---\ndescription: Review\n---\nReview $1 $2 $3 with $ARGUMENTS and $HOME\n",
        ),
        ("fix", "Fix $1 now.\r\nKeep CRLF.\r\n"),
        ("odd", "---\nnot closed\nOdd $ARGUMENTS"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in templates {
        write_file(&dir.path().join(format!("{name}.md")), text);
    }
    let files = FileCommandSource::from_dirs(vec![dir.path().to_path_buf()]);
    let memory = MemoryCommandSource::from_templates(templates);
    for (name, _) in templates {
        assert_eq!(
            files.command_body(name).await,
            memory.command_body(name).await,
            "{name}"
        );
    }
}
