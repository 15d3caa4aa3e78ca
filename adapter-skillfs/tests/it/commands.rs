//! File-backed slash commands.

use std::path::{Path, PathBuf};

use adapter_skillfs::{
    CommandDirsOptions, FileCommandSource, HostEnv, MAX_DEFINITION_FILE_BYTES, ProjectTrust,
};
use engine_ports::testkit::MemoryCommandSource;
use engine_ports::{CommandBody, CommandError, CommandSource as _, Level};

use crate::support::{mkfifo, sparse_file, within_ten_seconds, write_file};

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
async fn project_commands_need_a_trusted_workspace() {
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
async fn listing_descriptions_and_first_dir_wins() {
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
async fn file_bodies_equal_in_memory_bodies_byte_for_byte() {
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

#[tokio::test]
async fn a_command_file_symlinked_outside_is_not_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("passwd");
    write_file(&secret, "root:x:0:0:root:/root:/bin/sh\n");
    write_file(&dir.path().join("ok.md"), "fine");
    let link = dir.path().join("pw.md");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let commands = FileCommandSource::from_dirs(vec![dir.path().to_path_buf()]);

    let (listed, skipped) = commands.list_with_diagnostics();
    let names: Vec<&str> = listed.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["ok"]);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].path, link);
    assert!(skipped[0].reason.contains("symbolic link"), "{}", skipped[0]);
    assert_eq!(commands.list_commands().await.unwrap(), listed);

    let error = commands.command_body("pw").await.unwrap_err();
    let CommandError::Expand { reason, .. } = &error else {
        panic!("{error:?}");
    };
    assert!(reason.contains("symbolic link"), "{reason}");
    assert!(!reason.contains("root:x"), "{reason}");
    assert!(!reason.contains(&dir.path().display().to_string()), "{reason}");

    // A later directory's `pw.md` is not listed either: expanding `/pw` meets the
    // skipped file first.
    let later = tempfile::tempdir().unwrap();
    write_file(&later.path().join("pw.md"), "later");
    let both = FileCommandSource::from_dirs(vec![dir.path().to_path_buf(), later.path().to_path_buf()]);
    let names: Vec<String> = both
        .list_commands()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["ok"]);
    assert!(both.command_body("pw").await.is_err());
}

#[tokio::test]
async fn a_fifo_command_file_is_skipped_promptly() {
    let dir = tempfile::tempdir().unwrap();
    write_file(&dir.path().join("ok.md"), "fine");
    let fifo = dir.path().join("x.md");
    mkfifo(&fifo);
    let commands = FileCommandSource::from_dirs(vec![dir.path().to_path_buf()]);

    let listing = commands.clone();
    let (listed, skipped) = within_ten_seconds(move || listing.list_with_diagnostics());
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].path, fifo);
    assert!(skipped[0].reason.contains("not a regular file"), "{}", skipped[0]);

    let ten_seconds = std::time::Duration::from_secs(10);
    let listed = tokio::time::timeout(ten_seconds, commands.list_commands()).await;
    assert_eq!(listed.expect("listing hung").unwrap().len(), 1);
    let expanded = tokio::time::timeout(ten_seconds, commands.command_body("x")).await;
    let error = expanded.expect("expansion hung").unwrap_err();
    assert!(error.to_string().contains("not a regular file"), "{error}");
}

#[tokio::test]
async fn an_oversize_command_file_is_skipped_with_a_diagnostic_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.md");
    sparse_file(&big, MAX_DEFINITION_FILE_BYTES + 1);
    let commands = FileCommandSource::from_dirs(vec![dir.path().to_path_buf()]);

    let (listed, skipped) = commands.list_with_diagnostics();
    assert!(listed.is_empty(), "{listed:?}");
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(
        skipped[0]
            .reason
            .contains(&format!("over {MAX_DEFINITION_FILE_BYTES} bytes")),
        "{}",
        skipped[0]
    );
    let error = commands.command_body("big").await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains(&format!("over {MAX_DEFINITION_FILE_BYTES} bytes")),
        "{error}"
    );
}
