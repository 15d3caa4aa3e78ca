//! Fuzz target: a `SKILL.md` text through the real parser (frontmatter splitting,
//! YAML decoding at event level, field checks and caps), with and without a
//! directory name; the command-file describer reads the same text.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let _ = adapter_skillfs::parse_skill_md(data, None, 64);
        let _ = adapter_skillfs::parse_skill_md(data, Some("fuzz-skill"), 4096);
        if let Ok(text) = std::str::from_utf8(data) {
            let description = adapter_skillfs::describe_command(text);
            assert!(description.chars().count() <= adapter_skillfs::COMMAND_DESCRIPTION_CHARS);
        }
    });
}
