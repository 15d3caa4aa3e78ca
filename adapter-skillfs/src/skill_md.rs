//! The `SKILL.md` parser: frontmatter fields, their caps and notes, and the
//! validation order of the `SKILL.md` rules.

use std::collections::BTreeMap;
use std::fmt;

use engine_ports::{truncate_with_ellipsis, valid_skill_name};

use crate::confined::Refusal;
use crate::frontmatter;
use crate::yaml::{self, Entry, Node, Position};

/// The default output cap C (D10), in bytes: the body size above which a note says
/// activation will truncate, and the asset size limit of [`FsSource`](crate::FsSource).
pub const DEFAULT_OUTPUT_CAP: usize = 25_000;

/// Cap on `description`, in bytes.
pub const DESCRIPTION_CAP: usize = 800;
/// Cap on `license` and `compatibility`, in bytes.
pub const FIELD_CAP: usize = 1_024;
/// Most `metadata` entries kept.
pub const METADATA_MAX_ENTRIES: usize = 32;
/// Cap on one `metadata` value, in bytes.
pub const METADATA_VALUE_CAP: usize = 4_096;
/// Most `allowed-tools` names kept.
pub const ALLOWED_TOOLS_MAX: usize = 64;
/// Cap on one `allowed-tools` name, in bytes.
pub const ALLOWED_TOOL_NAME_CAP: usize = 64;
/// Most top-level frontmatter keys accepted (1,000); a `SKILL.md` with more is skipped.
/// A real frontmatter has a handful; the cap keeps a hostile one from making every
/// discovery decode a huge mapping.
pub const FRONTMATTER_MAX_KEYS: usize = 1_000;

/// The name grammar, as error messages state it.
pub const SKILL_NAME_GRAMMAR: &str = "^[a-z0-9][a-z0-9_-]{0,63}$";

/// A parsed, valid `SKILL.md`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedSkill {
    /// The trimmed name (valid under the grammar).
    pub name: String,
    /// The trimmed description, capped.
    pub description: String,
    /// The trimmed licence, capped.
    pub license: Option<String>,
    /// The trimmed compatibility note, capped.
    pub compatibility: Option<String>,
    /// The metadata (empty when absent or dropped).
    pub metadata: BTreeMap<String, String>,
    /// The advisory tool names, `Bash` read as `Shell`.
    pub allowed_tools: Vec<String>,
    /// The body with surrounding whitespace trimmed (never shortened).
    pub body: String,
    /// What was truncated or dropped; each becomes an operator diagnostic.
    pub notes: Vec<SkillNote>,
}

/// A value that went over its cap in a kept skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillNote {
    /// The field (`description`, `license`, `compatibility`, `metadata`,
    /// `metadata value`, `allowed-tools`, `allowed-tools entry`, `body`).
    pub field: &'static str,
    /// Its size, in `unit`s.
    pub size: usize,
    /// The cap, in `unit`s.
    pub cap: usize,
    /// What `size` and `cap` count.
    pub unit: NoteUnit,
    /// What happened to the value.
    pub action: NoteAction,
}

/// What a [`SkillNote`]'s numbers count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteUnit {
    /// Bytes.
    Bytes,
    /// Map entries.
    Entries,
    /// Tool names.
    Names,
}

/// What happened to a value over its cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteAction {
    /// Cut (with an ellipsis where the field is text).
    Truncated,
    /// Dropped entirely (metadata) or beyond the cap (tool names).
    Dropped,
    /// Kept whole; activation will truncate it to the output cap.
    KeptTruncatedAtActivation,
}

impl fmt::Display for SkillNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.unit {
            NoteUnit::Bytes => "bytes",
            NoteUnit::Entries => "entries",
            NoteUnit::Names => "names",
        };
        let action = match self.action {
            NoteAction::Truncated => "truncated",
            NoteAction::Dropped if self.field == "metadata value" => "the whole metadata map was dropped",
            NoteAction::Dropped if self.field == "allowed-tools" => "the names past the cap were dropped",
            NoteAction::Dropped => "dropped",
            NoteAction::KeptTruncatedAtActivation => "kept whole; activation will truncate it",
        };
        write!(
            f,
            "{} is {} {unit}, over the cap of {} {unit}; {action}",
            self.field, self.size, self.cap
        )
    }
}

/// Why a `SKILL.md` was skipped, in validation order. Texts never echo frontmatter
/// content other than the name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillFileError {
    /// (1) The file could not be read.
    #[error("SKILL.md could not be read: {kind}")]
    Unreadable {
        /// The I/O error kind.
        kind: std::io::ErrorKind,
    },
    /// (1) The file is a symbolic link (never followed).
    #[error("SKILL.md is a symbolic link, and skill files are never read through one")]
    Symlink,
    /// (1) The file is a directory, FIFO, socket or device.
    #[error("SKILL.md is not a regular file")]
    NotRegularFile,
    /// (1) The file is over [`MAX_DEFINITION_FILE_BYTES`](crate::MAX_DEFINITION_FILE_BYTES).
    #[error("SKILL.md is over {limit} bytes ({size} bytes seen)")]
    TooLarge {
        /// Bytes seen (the stat size, or the bytes read when the file grew).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// (1) The file is not UTF-8.
    #[error("SKILL.md is not valid UTF-8")]
    NotUtf8,
    /// (2) No frontmatter block.
    #[error(
        "no frontmatter: a leading `---` block is expected (the file must start with a line `---`, and a later line `---` closes the block)"
    )]
    NoFrontmatter,
    /// (3) The frontmatter is not a YAML mapping of the expected shape.
    #[error("malformed frontmatter{}", position_suffix(.line, .column))]
    Malformed {
        /// 1-based line in the file (the opener is line 1), when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
    },
    /// (3) The frontmatter has more than [`FRONTMATTER_MAX_KEYS`] top-level keys.
    #[error("frontmatter has {count} top-level keys, over the cap of {cap}")]
    TooManyKeys {
        /// The number of top-level keys.
        count: usize,
        /// The cap.
        cap: usize,
    },
    /// (4) `name` is missing or empty.
    #[error("frontmatter `name` is missing or empty")]
    NameMissing,
    /// (5) `name` breaks the grammar.
    #[error("name {name:?} is invalid: a skill name must match {SKILL_NAME_GRAMMAR}")]
    NameInvalid {
        /// The name (shortened when long).
        name: String,
    },
    /// (6) `description` is missing or empty.
    #[error("frontmatter `description` is missing or empty")]
    DescriptionMissing,
    /// (7) `name` differs from the directory name.
    #[error("name {name:?} differs from its directory name {dir:?}; they must be equal")]
    NameMismatch {
        /// The frontmatter name.
        name: String,
        /// The directory name.
        dir: String,
    },
}

fn position_suffix(line: &Option<usize>, column: &Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(" (YAML) at line {line}, column {column}"),
        (Some(line), None) => format!(" (YAML) at line {line}"),
        _ => " (YAML)".to_owned(),
    }
}

impl From<Refusal> for SkillFileError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Missing => Self::Unreadable {
                kind: std::io::ErrorKind::NotFound,
            },
            Refusal::Symlink => Self::Symlink,
            Refusal::NotRegular => Self::NotRegularFile,
            Refusal::TooLarge { size, limit } => Self::TooLarge { size, limit },
            Refusal::Io(kind) => Self::Unreadable { kind },
        }
    }
}

impl From<yaml::Refused> for SkillFileError {
    fn from(refused: yaml::Refused) -> Self {
        match refused {
            yaml::Refused::Malformed { position } => Self::malformed_at(position),
            yaml::Refused::TooManyKeys { count, cap } => Self::TooManyKeys { count, cap },
        }
    }
}

impl SkillFileError {
    fn malformed_at(position: Option<Position>) -> Self {
        Self::Malformed {
            line: position.map(|p| p.line),
            column: position.map(|p| p.column),
        }
    }
}

/// Parses one `SKILL.md` under the `SKILL.md` rules.
///
/// `dir_name` is the name of the directory holding the file; when given, the
/// frontmatter `name` must equal it (check 7). `output_cap` is C: a longer body is
/// kept with a note.
///
/// # Errors
/// The first failing check, in the order of [`SkillFileError`].
pub fn parse_skill_md(
    bytes: &[u8],
    dir_name: Option<&str>,
    output_cap: usize,
) -> Result<ParsedSkill, SkillFileError> {
    let text = std::str::from_utf8(bytes).map_err(|_| SkillFileError::NotUtf8)?;
    let normalized = frontmatter::normalize(text);
    let split = frontmatter::split(&normalized).ok_or(SkillFileError::NoFrontmatter)?;
    let entries =
        yaml::decode_mapping(split.frontmatter, 2, FRONTMATTER_MAX_KEYS).map_err(SkillFileError::from)?;
    let fields = Fields::decode(&entries)?;

    let name = fields.name.map(str::trim).unwrap_or_default();
    if name.is_empty() {
        return Err(SkillFileError::NameMissing);
    }
    if !valid_skill_name(name) {
        return Err(SkillFileError::NameInvalid {
            name: truncate_with_ellipsis(name, 128).into_owned(),
        });
    }
    let description = fields.description.map(str::trim).unwrap_or_default();
    if description.is_empty() {
        return Err(SkillFileError::DescriptionMissing);
    }
    if let Some(dir) = dir_name
        && dir != name
    {
        return Err(SkillFileError::NameMismatch {
            name: name.to_owned(),
            dir: dir.to_owned(),
        });
    }

    let mut notes = Vec::new();
    let description = capped_text("description", description, DESCRIPTION_CAP, &mut notes);
    let license = optional_text("license", fields.license, &mut notes);
    let compatibility = optional_text("compatibility", fields.compatibility, &mut notes);
    let metadata = fields
        .metadata
        .map(|m| cap_metadata(m, &mut notes))
        .unwrap_or_default();
    let allowed_tools = cap_allowed_tools(fields.allowed_tools, &mut notes);
    let body = split.body.trim();
    if body.len() > output_cap {
        notes.push(SkillNote {
            field: "body",
            size: body.len(),
            cap: output_cap,
            unit: NoteUnit::Bytes,
            action: NoteAction::KeptTruncatedAtActivation,
        });
    }
    Ok(ParsedSkill {
        name: name.to_owned(),
        description,
        license,
        compatibility,
        metadata,
        allowed_tools,
        body: body.to_owned(),
        notes,
    })
}

/// The scalar value of a top-level frontmatter key of a `SKILL.md` text, when the
/// text has a well-formed frontmatter mapping holding it as a scalar.
pub(crate) fn frontmatter_scalar(text: &str, key: &str) -> Option<String> {
    let normalized = frontmatter::normalize(text);
    let split = frontmatter::split(&normalized)?;
    let entries = yaml::decode_mapping(split.frontmatter, 2, FRONTMATTER_MAX_KEYS).ok()?;
    entries
        .into_iter()
        .find(|e| e.key == key)
        .and_then(|e| match e.value {
            Node::Scalar(value) => Some(value),
            _ => None,
        })
}

/// The known keys, shape-checked (a wrong shape is malformed frontmatter).
#[derive(Default)]
struct Fields<'a> {
    name: Option<&'a str>,
    description: Option<&'a str>,
    license: Option<&'a str>,
    compatibility: Option<&'a str>,
    metadata: Option<Vec<(&'a str, &'a str)>>,
    allowed_tools: Vec<&'a str>,
}

impl<'a> Fields<'a> {
    fn decode(entries: &'a [Entry]) -> Result<Self, SkillFileError> {
        let mut fields = Fields::default();
        for entry in entries {
            let malformed = || SkillFileError::malformed_at(Some(entry.position));
            match entry.key.as_str() {
                "name" => fields.name = present_scalar(&entry.value).ok_or_else(malformed)?,
                "description" => fields.description = present_scalar(&entry.value).ok_or_else(malformed)?,
                "license" => fields.license = present_scalar(&entry.value).ok_or_else(malformed)?,
                "compatibility" => {
                    fields.compatibility = present_scalar(&entry.value).ok_or_else(malformed)?;
                }
                "metadata" => fields.metadata = metadata_pairs(&entry.value).ok_or_else(malformed)?,
                "allowed-tools" => {
                    fields.allowed_tools = tool_pieces(&entry.value).ok_or_else(malformed)?;
                }
                _ => {}
            }
        }
        Ok(fields)
    }
}

/// `Some(None)` for an empty scalar (absent), `Some(Some(text))` for a scalar, `None`
/// for any other shape.
fn present_scalar(node: &Node) -> Option<Option<&str>> {
    match node {
        Node::Scalar(text) if text.is_empty() => Some(None),
        Node::Scalar(text) => Some(Some(text)),
        _ => None,
    }
}

fn metadata_pairs(node: &Node) -> Option<Option<Vec<(&str, &str)>>> {
    match node {
        Node::Scalar(text) if text.is_empty() => Some(None),
        Node::Map(pairs) => {
            let mut out = Vec::with_capacity(pairs.len());
            for (key, value) in pairs {
                match (key, value) {
                    (Node::Scalar(key), Node::Scalar(value)) => out.push((key.as_str(), value.as_str())),
                    _ => return None,
                }
            }
            Some(Some(out))
        }
        _ => None,
    }
}

fn tool_pieces(node: &Node) -> Option<Vec<&str>> {
    match node {
        Node::Scalar(text) => Some(text.split_whitespace().collect()),
        Node::Seq(items) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    Node::Scalar(text) => out.extend(text.split_whitespace()),
                    _ => return None,
                }
            }
            Some(out)
        }
        Node::Map(_) => None,
    }
}

fn capped_text(field: &'static str, value: &str, cap: usize, notes: &mut Vec<SkillNote>) -> String {
    if value.len() > cap {
        notes.push(SkillNote {
            field,
            size: value.len(),
            cap,
            unit: NoteUnit::Bytes,
            action: NoteAction::Truncated,
        });
    }
    truncate_with_ellipsis(value, cap).into_owned()
}

fn optional_text(field: &'static str, value: Option<&str>, notes: &mut Vec<SkillNote>) -> Option<String> {
    let value = value.map(str::trim).filter(|v| !v.is_empty())?;
    Some(capped_text(field, value, FIELD_CAP, notes))
}

fn cap_metadata(pairs: Vec<(&str, &str)>, notes: &mut Vec<SkillNote>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for (key, value) in pairs {
        let key = key.trim();
        if key.is_empty() {
            continue;
        }
        let value = value.trim();
        if value.len() > METADATA_VALUE_CAP {
            notes.push(SkillNote {
                field: "metadata value",
                size: value.len(),
                cap: METADATA_VALUE_CAP,
                unit: NoteUnit::Bytes,
                action: NoteAction::Dropped,
            });
            return BTreeMap::new();
        }
        map.entry(key.to_owned()).or_insert_with(|| value.to_owned());
    }
    if map.len() > METADATA_MAX_ENTRIES {
        notes.push(SkillNote {
            field: "metadata",
            size: map.len(),
            cap: METADATA_MAX_ENTRIES,
            unit: NoteUnit::Entries,
            action: NoteAction::Dropped,
        });
        return BTreeMap::new();
    }
    map
}

fn cap_allowed_tools(pieces: Vec<&str>, notes: &mut Vec<SkillNote>) -> Vec<String> {
    if pieces.len() > ALLOWED_TOOLS_MAX {
        notes.push(SkillNote {
            field: "allowed-tools",
            size: pieces.len(),
            cap: ALLOWED_TOOLS_MAX,
            unit: NoteUnit::Names,
            action: NoteAction::Dropped,
        });
    }
    pieces
        .into_iter()
        .take(ALLOWED_TOOLS_MAX)
        .map(|piece| {
            let piece = if piece == "Bash" { "Shell" } else { piece };
            capped_text("allowed-tools entry", piece, ALLOWED_TOOL_NAME_CAP, notes)
        })
        .collect()
}
