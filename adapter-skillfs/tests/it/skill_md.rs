//! The `SKILL.md` format: splitting, fields, caps and notes.

use adapter_skillfs::{FRONTMATTER_MAX_KEYS, NoteAction, ParsedSkill, SkillFileError, parse_skill_md};

use crate::support::{discover, skill_md, write_skill};

fn parse(text: &str) -> Result<ParsedSkill, SkillFileError> {
    parse_skill_md(text.as_bytes(), None, 25_000)
}

fn parse_ok(text: &str) -> ParsedSkill {
    parse(text).unwrap_or_else(|e| panic!("{text:?} must parse: {e}"))
}

fn tools(value: &str) -> Vec<String> {
    parse_ok(&skill_md("t", "d", &format!("allowed-tools: {value}\n"), "b")).allowed_tools
}

#[test]
fn description_cap_is_utf8_safe() {
    let long = parse_ok(&skill_md("a", &"x".repeat(1_600), "", "b"));
    assert!(long.description.len() <= 800 && long.description.ends_with('\u{2026}'));
    assert_eq!(long.notes.len(), 1);
    let note = long.notes[0].to_string();
    assert!(
        note.contains("description") && note.contains("truncated"),
        "{note}"
    );

    let fits = parse_ok(&skill_md("a", &"é".repeat(400), "", "b"));
    assert_eq!(fits.description, "é".repeat(400));
    assert!(fits.notes.is_empty());

    let over = parse_ok(&skill_md("a", &"é".repeat(401), "", "b"));
    assert!(over.description.len() <= 800 && over.description.ends_with('\u{2026}'));

    let root = tempfile::tempdir().unwrap();
    write_skill(
        root.path(),
        "long",
        &skill_md("long", &"x".repeat(1_600), "", "b"),
    );
    let found = discover(root.path());
    assert_eq!(found.skills.len(), 1);
    assert_eq!(found.diagnostics.len(), 1);
    let reason = &found.diagnostics[0].reason;
    assert!(
        reason.contains("description") && reason.contains("truncated"),
        "{reason}"
    );
}

#[test]
fn a_long_body_is_kept_with_a_note() {
    let body = "b".repeat(26_000);
    let parsed = parse_ok(&skill_md("a", "d", "", &body));
    assert_eq!(parsed.body.len(), 26_000);
    assert_eq!(parsed.notes.len(), 1);
    assert_eq!(parsed.notes[0].field, "body");
    assert_eq!(parsed.notes[0].action, NoteAction::KeptTruncatedAtActivation);
    let note = parsed.notes[0].to_string();
    assert!(
        note.contains("body") && note.contains("activation will truncate"),
        "{note}"
    );
}

#[test]
fn crlf_line_endings() {
    let parsed = parse_ok("---\r\nname: win\r\ndescription: CRLF line endings\r\n---\r\nbody here\r\n");
    assert_eq!(parsed.name, "win");
    assert_eq!(parsed.body, "body here");
    assert!(parsed.notes.is_empty());
}

#[test]
fn bom_and_delimiters() {
    let parsed = parse_ok("\u{FEFF}---\nname: bom\ndescription: d\n---\nx");
    assert_eq!((parsed.name.as_str(), parsed.body.as_str()), ("bom", "x"));
    for text in [
        "\n---\nname: a\ndescription: d\n---\nx",
        "--- \nname: a\ndescription: d\n---\nx",
        "---\nname: a\ndescription: d\n...\nx",
    ] {
        let error = parse(text).unwrap_err();
        assert_eq!(error, SkillFileError::NoFrontmatter, "{text:?}");
        assert!(error.to_string().contains("leading `---` block is expected"));
    }
}

#[test]
fn optional_fields() {
    let parsed = parse_ok(&skill_md(
        "a",
        "d",
        "license: MIT\ncompatibility: \"mecatl >= 0.1\"\nmetadata: {author: acme, version: \"1\"}\n",
        "b",
    ));
    assert_eq!(parsed.license.as_deref(), Some("MIT"));
    assert_eq!(parsed.compatibility.as_deref(), Some("mecatl >= 0.1"));
    assert_eq!(parsed.metadata.get("author").map(String::as_str), Some("acme"));
    assert_eq!(parsed.metadata.get("version").map(String::as_str), Some("1"));
    assert!(parsed.notes.is_empty());

    let root = tempfile::tempdir().unwrap();
    write_skill(
        root.path(),
        "a",
        &skill_md(
            "a",
            "d",
            "license: MIT\ncompatibility: \"mecatl >= 0.1\"\nmetadata: {author: acme}\n",
            "b",
        ),
    );
    let found = discover(root.path());
    assert!(found.diagnostics.is_empty());
    assert_eq!(found.skills[0].meta.license.as_deref(), Some("MIT"));
    assert_eq!(found.skills[0].meta.metadata.len(), 1);

    let bare = parse_ok(&skill_md("a", "d", "license:\n", "b"));
    assert_eq!((bare.license, bare.compatibility), (None, None));
    assert!(bare.metadata.is_empty() && bare.notes.is_empty());
}

#[test]
fn license_compatibility_and_metadata_caps() {
    let parsed = parse_ok(&skill_md(
        "a",
        "d",
        &format!(
            "license: {}\ncompatibility: {}\n",
            "l".repeat(2_048),
            "c".repeat(2_048)
        ),
        "b",
    ));
    assert!(parsed.license.unwrap().len() <= 1_024);
    assert!(parsed.compatibility.unwrap().len() <= 1_024);
    let notes: Vec<String> = parsed.notes.iter().map(ToString::to_string).collect();
    assert!(notes.iter().any(|n| n.contains("license")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("compatibility")), "{notes:?}");

    let entries: String = (0..33).map(|i| format!("  k{i}: v\n")).collect();
    let many = parse_ok(&skill_md("a", "d", &format!("metadata:\n{entries}"), "b"));
    assert!(many.metadata.is_empty());
    assert_eq!(many.notes.len(), 1);
    assert!(many.notes[0].to_string().contains("metadata"));
    assert_eq!(many.notes[0].action, NoteAction::Dropped);

    let big = parse_ok(&skill_md(
        "a",
        "d",
        &format!("metadata:\n  ok: v\n  big: {}\n", "v".repeat(4_097)),
        "b",
    ));
    assert!(big.metadata.is_empty());
    assert!(big.notes[0].to_string().contains("metadata"));

    let limit = parse_ok(&skill_md(
        "a",
        "d",
        &format!("metadata:\n  big: {}\n", "v".repeat(4_096)),
        "b",
    ));
    assert_eq!(limit.metadata.len(), 1);
    assert!(limit.notes.is_empty());
}

#[test]
fn allowed_tools_forms() {
    let expected = ["Shell", "Read", "Grep"];
    assert_eq!(tools("\"Shell Read Grep\""), expected);
    assert_eq!(tools("\"  Shell   Read    Grep  \""), expected);
    assert_eq!(tools("\n  - Shell\n  - Read\n  - Grep"), expected);
    assert!(parse_ok(&skill_md("a", "d", "", "b")).allowed_tools.is_empty());
}

#[test]
fn allowed_tools_caps() {
    let names: Vec<String> = (0..65).map(|i| format!("t{i}")).collect();
    let parsed = parse_ok(&skill_md(
        "a",
        "d",
        &format!("allowed-tools: {}\n", names.join(" ")),
        "b",
    ));
    assert_eq!(parsed.allowed_tools, names[..64]);
    assert_eq!(parsed.notes.len(), 1);
    assert!(parsed.notes[0].to_string().contains("allowed-tools"));

    let parsed = parse_ok(&skill_md(
        "a",
        "d",
        &format!("allowed-tools: {}\n", "n".repeat(128)),
        "b",
    ));
    assert_eq!(parsed.allowed_tools.len(), 1);
    assert!(parsed.allowed_tools[0].len() <= 64);
    assert_eq!(parsed.notes.len(), 1);
    assert!(parsed.notes[0].to_string().contains("allowed-tools"));
}

#[test]
fn scalars_are_read_as_source_text() {
    for literal in ["123", "true", "42", "2026-08-28T12:00:00Z", "null"] {
        let parsed = parse_ok(&skill_md("a", "d", &format!("allowed-tools: {literal}\n"), "b"));
        assert_eq!(parsed.allowed_tools, [literal], "{literal}");
        assert!(parsed.notes.is_empty());
    }
    assert_eq!(parse_ok(&skill_md("123", "d", "", "b")).name, "123");
}

#[test]
fn mixed_forms() {
    let parsed = parse_ok(&skill_md(
        "a",
        "d",
        "allowed-tools: [Read, \"Grep Shell\"]\nmetadata: {audience: engineers}\nunknown-future-field: x\n",
        "b",
    ));
    assert_eq!(parsed.allowed_tools, ["Read", "Grep", "Shell"]);
    assert_eq!(
        parsed.metadata.get("audience").map(String::as_str),
        Some("engineers")
    );
}

#[test]
fn a_mapping_of_allowed_tools_is_malformed() {
    let error = parse(&skill_md("a", "d", "allowed-tools: {a: b}\n", "b")).unwrap_err();
    assert!(matches!(error, SkillFileError::Malformed { .. }), "{error:?}");
    for extra in [
        "allowed-tools: [[a]]\n",
        "metadata: [a]\n",
        "metadata: {a: [b]}\n",
        "license: [a]\n",
    ] {
        let error = parse(&skill_md("a", "d", extra, "b")).unwrap_err();
        assert!(
            matches!(error, SkillFileError::Malformed { .. }),
            "{extra}: {error:?}"
        );
    }
}

#[test]
fn decode_failures_never_echo_content() {
    let error = parse("---\nname: leaked-secret\ndescription: [unterminated\n---\nbody\n").unwrap_err();
    let SkillFileError::Malformed { line, column } = error else {
        panic!("{error:?}");
    };
    assert!(line.is_some() && column.is_some());
    let text = error.to_string();
    assert!(
        text.contains("malformed") && text.contains("line") && text.contains("column"),
        "{text}"
    );
    assert!(
        !text.contains("leaked-secret") && !text.contains("unterminated"),
        "{text}"
    );
}

#[test]
fn positions_are_file_lines_with_the_opener_as_line_one() {
    let error = parse("---\nname: a\ndescription: d\nallowed-tools: {a: b}\n---\nx").unwrap_err();
    assert_eq!(
        error,
        SkillFileError::Malformed {
            line: Some(4),
            column: Some(1)
        }
    );
}

#[test]
fn legacy_bash_reads_as_shell() {
    assert_eq!(tools("\"Bash Read\""), ["Shell", "Read"]);
    assert_eq!(tools("\"Bash Bash bash\""), ["Shell", "Shell", "bash"]);
}

#[test]
fn the_validation_order_is_the_specified_one() {
    assert_eq!(
        parse_skill_md(&[0xFF, 0xFE], None, 10),
        Err(SkillFileError::NotUtf8)
    );
    assert_eq!(parse("no block"), Err(SkillFileError::NoFrontmatter));
    assert!(matches!(
        parse("---\n: [\n---\n"),
        Err(SkillFileError::Malformed { .. })
    ));
    assert_eq!(parse("---\n---\nbody"), Err(SkillFileError::NameMissing));
    assert_eq!(
        parse("---\nname: \"  \"\ndescription: d\n---\n"),
        Err(SkillFileError::NameMissing)
    );
    let invalid = parse("---\nname: Bad Name\n---\n").unwrap_err();
    assert_eq!(
        invalid,
        SkillFileError::NameInvalid {
            name: "Bad Name".into()
        }
    );
    assert!(invalid.to_string().contains("^[a-z0-9][a-z0-9_-]{0,63}$"));
    assert_eq!(
        parse("---\nname: a\n---\n"),
        Err(SkillFileError::DescriptionMissing)
    );
    let mismatch = parse_skill_md(b"---\nname: foo\ndescription: d\n---\n", Some("bar"), 10).unwrap_err();
    assert!(mismatch.to_string().contains("\"foo\"") && mismatch.to_string().contains("\"bar\""));
    let empty_body = parse_ok("---\nname: a\ndescription: \"  d  \"\n---\n");
    assert_eq!(
        (empty_body.description.as_str(), empty_body.body.as_str()),
        ("d", "")
    );
}

/// A valid `SKILL.md` whose frontmatter has `keys` top-level keys in all (`name` and
/// `description` included).
fn with_keys(keys: usize) -> String {
    let extra: String = (2..keys).map(|i| format!("key{i}: v\n")).collect();
    skill_md("many", "d", &extra, "b")
}

#[test]
fn a_frontmatter_with_100000_keys_is_refused_quickly_with_the_key_cap() {
    let text = with_keys(100_000);
    let started = std::time::Instant::now();
    let refused = parse(&text);
    // Generous bound: decoding used to be quadratic in the keys (80,000 took 7.6 s).
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        refused,
        Err(SkillFileError::TooManyKeys {
            count: 100_000,
            cap: FRONTMATTER_MAX_KEYS
        })
    );
    let message = refused.unwrap_err().to_string();
    assert!(
        message.contains("100000") && message.contains(&FRONTMATTER_MAX_KEYS.to_string()),
        "{message}"
    );
}

#[test]
fn a_frontmatter_at_the_key_cap_is_accepted_and_one_more_key_is_refused() {
    assert_eq!(parse_ok(&with_keys(FRONTMATTER_MAX_KEYS)).name, "many");
    assert_eq!(
        parse(&with_keys(FRONTMATTER_MAX_KEYS + 1)),
        Err(SkillFileError::TooManyKeys {
            count: FRONTMATTER_MAX_KEYS + 1,
            cap: FRONTMATTER_MAX_KEYS
        })
    );
}

#[test]
fn a_skill_over_the_key_cap_is_skipped_with_a_diagnostic_naming_its_file() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_skill(root.path(), "many", &with_keys(FRONTMATTER_MAX_KEYS + 1));
    let found = discover(root.path());
    assert!(found.skills.is_empty());
    assert_eq!(found.diagnostics.len(), 1, "{:?}", found.diagnostics);
    assert_eq!(found.diagnostics[0].path, dir.join("SKILL.md"));
    let reason = &found.diagnostics[0].reason;
    assert!(
        reason.contains(&format!("{} top-level keys", FRONTMATTER_MAX_KEYS + 1))
            && reason.contains(&format!("cap of {FRONTMATTER_MAX_KEYS}")),
        "{reason}"
    );
}
