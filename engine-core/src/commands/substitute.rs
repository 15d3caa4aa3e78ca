//! `$ARGUMENTS` and `$N` substitution in one left-to-right pass.

/// Substitutes `args` into `template` in one pass; inserted text is never scanned
/// again. `$ARGUMENTS` (a prefix match) becomes the arguments joined by single
/// spaces; `$` followed by digits consumes all of them and becomes that 1-based
/// argument (`$0`, an index out of range or too large to parse become empty); any
/// other `$` stays.
pub fn substitute(template: &str, args: &[&str]) -> String {
    let mut out = String::with_capacity(template.len() + args.iter().map(|a| a.len() + 1).sum::<usize>());
    let mut rest = template;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            for (index, arg) in args.iter().enumerate() {
                if index > 0 {
                    out.push(' ');
                }
                out.push_str(arg);
            }
            rest = tail;
            continue;
        }
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            out.push('$');
            rest = after;
            continue;
        }
        let position = after[..digits].parse::<usize>().ok();
        if let Some(arg) = position.and_then(|n| n.checked_sub(1)).and_then(|i| args.get(i)) {
            out.push_str(arg);
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        assert_eq!(
            substitute("$1 and $2; all: $ARGUMENTS", &["a", "b"]),
            "a and b; all: a b"
        );
        assert_eq!(substitute("$0|$3|$99999999999999999999999|$", &["a"]), "|||$");
        assert_eq!(substitute("$ARGUMENTSx $HOME $ $$1", &["a"]), "ax $HOME $ $a");
        assert_eq!(
            substitute("$1", &["$2", "no"]),
            "$2",
            "inserted text is not rescanned"
        );
        assert_eq!(substitute("$ARGUMENTS", &[]), "");
        assert_eq!(substitute("é$1ü", &["x"]), "éxü");
    }
}
