//! A shell-aware splitter for permission rules: a command line becomes the simple
//! commands it runs (split at `&&`, `||`, `;`, `|`, `&`, newlines and subshell
//! parentheses; the commands inside `$(...)` and backquotes become parts of their
//! own), each as its words after quote and escape removal. Whatever this splitter
//! does not understand with confidence (here-documents, arithmetic, process
//! substitution, `$'...'`, control keywords, unterminated quotes) makes the whole
//! command unparsed: no `allow` rule ever matches it.

/// One simple command of a command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Part {
    /// Its words (quotes and escapes removed), leading `NAME=value` assignments
    /// excluded.
    pub words: Vec<String>,
    /// Whether it began with variable assignments (`FOO=1 cmd`).
    pub assigns: bool,
    /// Whether it redirects output to a file (`> f`, `>> f`, `&> f`; `2>&1` and
    /// `/dev/null` targets excepted).
    pub writes_file: bool,
}

/// Words that start shell syntax this splitter does not follow.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "function",
    "select", "{", "}", "[[", "]]", "!", "coproc", "time",
];

/// Splits `command` into its simple commands; `None` when it cannot be parsed with
/// confidence.
pub fn split(command: &str) -> Option<Vec<Part>> {
    let mut parts = Vec::new();
    let chars: Vec<char> = command.chars().collect();
    let end = Splitter {
        chars: &chars,
        at: 0,
        parts: &mut parts,
    }
    .list(None)?;
    (end == chars.len()).then_some(parts)
}

struct Splitter<'a> {
    chars: &'a [char],
    at: usize,
    parts: &'a mut Vec<Part>,
}

/// A word as it is being read: its text, and whether any of it was quoted.
#[derive(Default)]
struct Word {
    text: String,
    quoted: bool,
    started: bool,
}

impl Splitter<'_> {
    fn peek(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    /// Reads a list of commands up to `close` (`)` or the backquote) or the end;
    /// returns the position after the closing character (or the end).
    fn list(&mut self, close: Option<char>) -> Option<usize> {
        let mut current = Part::default();
        let mut word = Word::default();
        let mut pending_redirect: Option<bool> = None; // Some(writes) while the target is read
        loop {
            let Some(c) = self.peek(0) else {
                if close.is_some() {
                    return None;
                }
                self.end_word(&mut current, &mut word, &mut pending_redirect)?;
                self.end_part(&mut current, pending_redirect)?;
                return Some(self.at);
            };
            if Some(c) == close {
                self.end_word(&mut current, &mut word, &mut pending_redirect)?;
                self.end_part(&mut current, pending_redirect)?;
                self.at += 1;
                return Some(self.at);
            }
            match c {
                ' ' | '\t' => {
                    self.end_word(&mut current, &mut word, &mut pending_redirect)?;
                    self.at += 1;
                }
                '\n' | ';' | '&' | '|' => {
                    self.end_word(&mut current, &mut word, &mut pending_redirect)?;
                    if c == '&' && self.peek(1) == Some('>') {
                        // `&>` / `&>>`: output and errors to a file.
                        self.at += if self.peek(2) == Some('>') { 3 } else { 2 };
                        pending_redirect = Some(true);
                        continue;
                    }
                    self.end_part(&mut current, pending_redirect)?;
                    pending_redirect = None;
                    if c == ';' && self.peek(1) == Some(';') {
                        return None;
                    }
                    self.at += 1;
                    if (c == '&' || c == '|') && self.peek(0) == Some(c) {
                        self.at += 1;
                    }
                }
                '#' if !word.started => {
                    while let Some(c) = self.peek(0) {
                        if c == '\n' {
                            break;
                        }
                        self.at += 1;
                    }
                }
                '(' => {
                    if word.started || !current.words.is_empty() || current.assigns {
                        return None;
                    }
                    self.at += 1;
                    self.list(Some(')'))?;
                }
                ')' => return None,
                '<' | '>' => {
                    let digits_only =
                        word.started && !word.quoted && word.text.chars().all(|c| c.is_ascii_digit());
                    if word.started && !digits_only {
                        self.end_word(&mut current, &mut word, &mut pending_redirect)?;
                    } else {
                        word = Word::default();
                    }
                    if pending_redirect.is_some() {
                        return None;
                    }
                    self.at += 1;
                    match (c, self.peek(0)) {
                        ('<', Some('<' | '(')) | ('>', Some('(')) => return None,
                        ('>', Some('&')) => {
                            // `>&2`, `2>&1`: a descriptor, not a file.
                            self.at += 1;
                            while self.peek(0).is_some_and(|c| c.is_ascii_digit() || c == '-') {
                                self.at += 1;
                            }
                        }
                        ('>', Some('>' | '|')) => {
                            self.at += 1;
                            pending_redirect = Some(true);
                        }
                        ('>', _) => pending_redirect = Some(true),
                        _ => pending_redirect = Some(false),
                    }
                }
                '\\' => {
                    self.at += 1;
                    let next = self.peek(0)?;
                    self.at += 1;
                    if next != '\n' {
                        word.text.push(next);
                        word.quoted = true;
                        word.started = true;
                    }
                }
                '\'' => {
                    self.at += 1;
                    word.started = true;
                    word.quoted = true;
                    loop {
                        let c = self.peek(0)?;
                        self.at += 1;
                        if c == '\'' {
                            break;
                        }
                        word.text.push(c);
                    }
                }
                '"' => {
                    self.at += 1;
                    word.started = true;
                    word.quoted = true;
                    loop {
                        let c = self.peek(0)?;
                        match c {
                            '"' => {
                                self.at += 1;
                                break;
                            }
                            '\\' => {
                                let next = self.peek(1)?;
                                if matches!(next, '"' | '\\' | '$' | '`' | '\n') {
                                    if next != '\n' {
                                        word.text.push(next);
                                    }
                                    self.at += 2;
                                } else {
                                    word.text.push('\\');
                                    self.at += 1;
                                }
                            }
                            '$' | '`' => self.dollar_or_backquote(&mut word)?,
                            _ => {
                                word.text.push(c);
                                self.at += 1;
                            }
                        }
                    }
                }
                '$' | '`' => self.dollar_or_backquote(&mut word)?,
                _ => {
                    word.text.push(c);
                    word.started = true;
                    self.at += 1;
                }
            }
        }
    }

    /// `$(...)` and backquotes: their commands become parts of their own; `$((`,
    /// `$'`, `$"` are refused; any other `$` is kept in the word.
    fn dollar_or_backquote(&mut self, word: &mut Word) -> Option<()> {
        word.started = true;
        if self.peek(0) == Some('`') {
            self.at += 1;
            self.list(Some('`'))?;
            word.text.push_str("$(…)");
            return Some(());
        }
        match self.peek(1) {
            Some('(') => {
                if self.peek(2) == Some('(') {
                    return None;
                }
                self.at += 2;
                self.list(Some(')'))?;
                word.text.push_str("$(…)");
            }
            Some('\'' | '"') if !word.quoted || self.peek(1) == Some('\'') => return None,
            _ => {
                word.text.push('$');
                self.at += 1;
            }
        }
        Some(())
    }

    fn end_word(&mut self, part: &mut Part, word: &mut Word, redirect: &mut Option<bool>) -> Option<()> {
        if !word.started {
            return Some(());
        }
        let Word { text, quoted, .. } = std::mem::take(word);
        if let Some(writes) = redirect.take() {
            if writes && text != "/dev/null" {
                part.writes_file = true;
            }
            return Some(());
        }
        if part.words.is_empty() && !quoted && is_assignment(&text) {
            part.assigns = true;
            return Some(());
        }
        if part.words.is_empty() && !quoted && KEYWORDS.contains(&text.as_str()) {
            return None;
        }
        part.words.push(text);
        Some(())
    }

    fn end_part(&mut self, part: &mut Part, redirect: Option<bool>) -> Option<()> {
        if redirect.is_some() {
            // A redirection without its target.
            return None;
        }
        let done = std::mem::take(part);
        if !done.words.is_empty() || done.assigns || done.writes_file {
            self.parts.push(done);
        }
        Some(())
    }
}

/// `NAME=value` with a valid shell name.
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A lenient reading of a command no parse could follow, for `deny` and `ask` rules
/// only: every run of words between operator characters, quotes dropped.
pub(crate) fn lenient_parts(command: &str) -> Vec<Vec<String>> {
    command
        .split(['\n', ';', '&', '|', '(', ')', '`', '{', '}'])
        .map(|piece| {
            piece
                .replace(['\'', '"', '\\', '$'], " ")
                .split_whitespace()
                .filter(|w| !is_assignment(w))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|words| !words.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Option<Vec<Vec<String>>> {
        split(command).map(|parts| parts.into_iter().map(|p| p.words).collect())
    }

    fn w(parts: &[&[&str]]) -> Option<Vec<Vec<String>>> {
        Some(
            parts
                .iter()
                .map(|p| p.iter().map(|s| (*s).to_owned()).collect())
                .collect(),
        )
    }

    #[test]
    fn operators_split_commands_and_quotes_keep_them_whole() {
        assert_eq!(
            words("git add a && git commit -m 'x && y'"),
            w(&[&["git", "add", "a"], &["git", "commit", "-m", "x && y"]])
        );
        assert_eq!(
            words("a || b; c | d & e\nf"),
            w(&[&["a"], &["b"], &["c"], &["d"], &["e"], &["f"]])
        );
        assert_eq!(words(r#"echo "a;b" c\;d"#), w(&[&["echo", "a;b", "c;d"]]));
        assert_eq!(words("(cd x && rm y)"), w(&[&["cd", "x"], &["rm", "y"]]));
    }

    #[test]
    fn substitutions_are_parts_of_their_own() {
        assert_eq!(
            words("echo $(rm -rf /)"),
            w(&[&["rm", "-rf", "/"], &["echo", "$(…)"]])
        );
        assert_eq!(words("echo \"`id`\""), w(&[&["id"], &["echo", "$(…)"]]));
    }

    #[test]
    fn what_is_not_followed_is_unparsed() {
        for command in [
            "echo 'open",
            "cat <<EOF\nx\nEOF",
            "echo $((1+2))",
            "for f in *; do rm $f; done",
            "diff <(ls a) <(ls b)",
            "echo $'\\x41'",
            "echo >",
            "echo )",
        ] {
            assert_eq!(split(command), None, "{command}");
        }
    }

    #[test]
    fn redirections_and_assignments_are_noted() {
        let parts = split("FOO=1 echo x > out 2>&1").unwrap();
        assert_eq!(parts[0].words, ["echo", "x"]);
        assert!(parts[0].assigns && parts[0].writes_file);
        let parts = split("cargo test 2>/dev/null").unwrap();
        assert_eq!(parts[0].words, ["cargo", "test"]);
        assert!(!parts[0].writes_file);
    }
}
