//! The slash-command grammar.

/// A command-shaped input: `/name` and its positional arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandInvocation<'a> {
    /// The name, without `/` (non-empty, only `[A-Za-z0-9._-]`).
    pub name: &'a str,
    /// The rest, split on whitespace, with no quoting.
    pub args: Vec<&'a str>,
}

/// Parses `input` as a command: after stripping leading spaces and tabs (and nothing
/// else) it must start with `/` directly followed by at least one character of
/// `[A-Za-z0-9._-]`; the name ends at the first character outside that set and the
/// rest is split on whitespace into arguments (`"a b"` gives `"a` and `b"`). So
/// `/etc/hosts` is the command `etc` with the argument `/hosts`, while `/`, `/ x` and
/// `look at /x` are not commands (`None`).
pub fn parse_command(input: &str) -> Option<CommandInvocation<'_>> {
    let rest = input.trim_start_matches([' ', '\t']).strip_prefix('/')?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .unwrap_or(rest.len());
    if end == 0 {
        return None;
    }
    Some(CommandInvocation {
        name: &rest[..end],
        args: rest[end..].split_whitespace().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(input: &str) -> Option<(&str, Vec<&str>)> {
        parse_command(input).map(|c| (c.name, c.args))
    }

    #[test]
    fn commands_and_non_commands() {
        assert_eq!(
            parsed("/review foo.go bar.go"),
            Some(("review", vec!["foo.go", "bar.go"]))
        );
        assert_eq!(parsed(" \t/fix"), Some(("fix", vec![])));
        assert_eq!(parsed("/etc/hosts"), Some(("etc", vec!["/hosts"])));
        assert_eq!(parsed("/q \"a b\""), Some(("q", vec!["\"a", "b\""])));
        assert_eq!(parsed("/a.b_c-d,x y"), Some(("a.b_c-d", vec![",x", "y"])));
        for input in ["", "/", "/ x", "look at /x", "\n/x", "//x", "/±"] {
            assert_eq!(parsed(input), None, "{input:?}");
        }
    }
}
