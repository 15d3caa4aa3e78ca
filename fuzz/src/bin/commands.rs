//! Fuzz target: the slash-command grammar, frontmatter stripping and one-pass
//! `$ARGUMENTS` / `$N` substitution. The input is `template NUL input-line`; the
//! rendered expansion must stay within the cap.

use engine_core::{OutputCap, parse_command, render_template, strip_frontmatter, substitute};
use engine_ports::CommandBody;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Ok(text) = std::str::from_utf8(data) else {
            return;
        };
        let (template, line) = text.split_once('\0').unwrap_or((text, text));
        let args = parse_command(line).map(|c| c.args).unwrap_or_default();
        let _ = substitute(strip_frontmatter(template), &args);
        let body = CommandBody {
            body: template.to_owned(),
            post: line.to_owned(),
        };
        let cap = OutputCap::new(256);
        assert!(render_template(&body, &args, cap).len() <= cap.max_bytes());
    });
}
