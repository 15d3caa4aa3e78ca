//! The bounded asset-inventory block shared by `Skill` activation and skill
//! commands, and the one-line rendering of skill descriptions.

use std::fmt::Write as _;

use engine_ports::SkillAsset;

/// Most bytes of an inventory block, header and omitted line included.
pub const INVENTORY_CAP: usize = 8_000;

/// The inventory header: logical names, fetched through the `Skill` tool.
pub(crate) const INVENTORY_HEADER: &str =
    "Bundled assets, by logical name (to fetch one, call the Skill tool again with `name` and `asset`):";

/// Appends the inventory block for `assets` (non-empty) to `out`, without a trailing
/// newline: the header, then `  - <asset> (<size> bytes)` per asset in listing order.
/// Before each asset line, if that line plus an omitted line would push the block over
/// [`INVENTORY_CAP`], an indented omitted line giving the count not shown is written
/// instead and the block ends.
pub(crate) fn write_inventory(out: &mut String, assets: &[SkillAsset]) {
    let start = out.len();
    out.push_str(INVENTORY_HEADER);
    for (index, asset) in assets.iter().enumerate() {
        let line_len = "\n  - ".len() + asset.name.len() + " (".len() + digits(asset.size) + " bytes)".len();
        let remaining = assets.len() - index;
        let used = out.len() - start;
        if used + line_len + omitted_len(remaining) > INVENTORY_CAP {
            write_omitted(out, remaining);
            return;
        }
        let _ = write!(out, "\n  - {} ({} bytes)", asset.name, asset.size);
    }
}

fn write_omitted(out: &mut String, count: usize) {
    let _ = write!(out, "\n  ({count} more assets omitted)");
}

fn omitted_len(count: usize) -> usize {
    "\n  (".len() + digits(count as u64) + " more assets omitted)".len()
}

fn digits(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// `text` with every whitespace run that contains a line break replaced by one space
/// (other whitespace runs are kept as they are).
pub(crate) fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run_start: Option<usize> = None;
    let flush = |out: &mut String, run: &str| {
        if run.chars().any(is_line_break) {
            out.push(' ');
        } else {
            out.push_str(run);
        }
    };
    for (index, c) in text.char_indices() {
        match (c.is_whitespace(), run_start) {
            (true, None) => run_start = Some(index),
            (true, Some(_)) => {}
            (false, Some(start)) => {
                flush(&mut out, &text[start..index]);
                run_start = None;
                out.push(c);
            }
            (false, None) => out.push(c),
        }
    }
    if let Some(start) = run_start {
        flush(&mut out, &text[start..]);
    }
    out
}

fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assets(count: usize) -> Vec<SkillAsset> {
        (0..count)
            .map(|i| SkillAsset {
                name: format!("references/{i:04}.md"),
                size: 10,
                executable: false,
            })
            .collect()
    }

    #[test]
    fn small_inventories_list_every_asset() {
        let mut out = String::new();
        write_inventory(&mut out, &assets(2));
        assert_eq!(
            out,
            format!(
                "{INVENTORY_HEADER}\n  - references/0000.md (10 bytes)\n  - references/0001.md (10 bytes)"
            )
        );
    }

    #[test]
    fn the_cap_holds_exactly_at_the_boundary() {
        for count in [200, 250, 260, 300, 1_000] {
            let mut out = String::from("prefix");
            write_inventory(&mut out, &assets(count));
            let block = &out["prefix".len()..];
            assert!(block.len() <= INVENTORY_CAP, "{count}: {}", block.len());
            let shown = block.lines().filter(|l| l.ends_with("bytes)")).count();
            if shown < count {
                let last = block.lines().last().unwrap();
                assert_eq!(last, format!("  ({} more assets omitted)", count - shown));
            }
        }
    }

    #[test]
    fn line_breaking_runs_become_one_space() {
        assert_eq!(one_line("a \n b\tc  d\r\ne\u{2028}f"), "a b\tc  d e f");
        assert_eq!(one_line("trailing\n"), "trailing ");
    }
}
