//! Frontmatter YAML decoded at event level, so scalars keep their source text.
//!
//! `gray_matter`'s YAML engine (yaml-rust2) converts scalars to typed values
//! (`123` → integer, `null` → nothing) and its errors carry the parser's words; the
//! spec wants source text and value-free errors with file positions. So the same
//! parser is driven through its event API here and every failure is reduced to a
//! position.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::Marker;

/// A decoded frontmatter node: scalars as their source text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// A scalar, as written (quotes and escapes resolved).
    Scalar(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in document order.
    Map(Vec<(Node, Node)>),
}

/// One top-level entry of the frontmatter mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The key's text.
    pub(crate) key: String,
    /// The value.
    pub(crate) value: Node,
    /// Where the key starts, in file coordinates.
    pub(crate) position: Position,
}

/// A 1-based line and column in the file (the opener is line 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Position {
    /// Line.
    pub(crate) line: usize,
    /// Column.
    pub(crate) column: usize,
}

/// Why the frontmatter is not a usable YAML mapping; only a position, never content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Malformed {
    /// Where the parser stopped, when known.
    pub(crate) position: Option<Position>,
}

/// Deepest nesting accepted (frontmatter is flat; this only guards the recursion).
const MAX_DEPTH: usize = 64;

/// Decodes `frontmatter` (which starts on file line `first_line`) as a mapping. An
/// empty document is an empty mapping. Aliases, several documents, non-scalar or
/// duplicate top-level keys are malformed.
pub(crate) fn decode_mapping(frontmatter: &str, first_line: usize) -> Result<Vec<Entry>, Malformed> {
    let mut reader = Reader {
        parser: Parser::new_from_str(frontmatter),
        first_line,
    };
    let (event, mark) = reader.next()?;
    if event != Event::StreamStart {
        return Err(reader.at(mark));
    }
    let (event, mark) = reader.next()?;
    let entries = match event {
        Event::StreamEnd => return Ok(Vec::new()),
        Event::DocumentStart => {
            let (event, mark) = reader.next()?;
            match event {
                Event::MappingStart(..) => reader.top_level()?,
                _ => return Err(reader.at(mark)),
            }
        }
        _ => return Err(reader.at(mark)),
    };
    let (event, mark) = reader.next()?;
    if event != Event::DocumentEnd {
        return Err(reader.at(mark));
    }
    let (event, mark) = reader.next()?;
    if event != Event::StreamEnd {
        return Err(reader.at(mark));
    }
    Ok(entries)
}

struct Reader<'a> {
    parser: Parser<std::str::Chars<'a>>,
    first_line: usize,
}

impl Reader<'_> {
    fn next(&mut self) -> Result<(Event, Marker), Malformed> {
        self.parser.next_token().map_err(|error| {
            let mark = *error.marker();
            self.at(mark)
        })
    }

    fn at(&self, mark: Marker) -> Malformed {
        Malformed {
            position: Some(self.position(mark)),
        }
    }

    fn position(&self, mark: Marker) -> Position {
        Position {
            line: mark.line() + self.first_line - 1,
            column: mark.col() + 1,
        }
    }

    fn top_level(&mut self) -> Result<Vec<Entry>, Malformed> {
        let mut entries: Vec<Entry> = Vec::new();
        loop {
            let (event, mark) = self.next()?;
            let key = match event {
                Event::MappingEnd => return Ok(entries),
                Event::Scalar(text, ..) => text,
                _ => return Err(self.at(mark)),
            };
            if entries.iter().any(|e| e.key == key) {
                return Err(self.at(mark));
            }
            let (event, value_mark) = self.next()?;
            let value = self.node(event, value_mark, 1)?;
            entries.push(Entry {
                key,
                value,
                position: self.position(mark),
            });
        }
    }

    fn node(&mut self, event: Event, mark: Marker, depth: usize) -> Result<Node, Malformed> {
        if depth > MAX_DEPTH {
            return Err(self.at(mark));
        }
        match event {
            Event::Scalar(text, ..) => Ok(Node::Scalar(text)),
            Event::SequenceStart(..) => {
                let mut items = Vec::new();
                loop {
                    let (event, mark) = self.next()?;
                    if event == Event::SequenceEnd {
                        return Ok(Node::Seq(items));
                    }
                    items.push(self.node(event, mark, depth + 1)?);
                }
            }
            Event::MappingStart(..) => {
                let mut pairs = Vec::new();
                loop {
                    let (event, mark) = self.next()?;
                    if event == Event::MappingEnd {
                        return Ok(Node::Map(pairs));
                    }
                    let key = self.node(event, mark, depth + 1)?;
                    let (event, mark) = self.next()?;
                    let value = self.node(event, mark, depth + 1)?;
                    pairs.push((key, value));
                }
            }
            // Aliases are refused rather than expanded: frontmatter has no use for
            // them and expansion is the classic way to blow memory up.
            _ => Err(self.at(mark)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(text: &str) -> Node {
        Node::Scalar(text.to_owned())
    }

    #[test]
    fn scalars_keep_their_source_text() {
        let entries = decode_mapping(
            "a: 123\nb: null\nc: 2026-08-28T12:00:00Z\nd: true\ne: \"q\\tx\"\nf:\ng: 1.50\n",
            2,
        )
        .unwrap();
        let values: Vec<(&str, &Node)> = entries.iter().map(|e| (e.key.as_str(), &e.value)).collect();
        assert_eq!(
            values,
            [
                ("a", &scalar("123")),
                ("b", &scalar("null")),
                ("c", &scalar("2026-08-28T12:00:00Z")),
                ("d", &scalar("true")),
                ("e", &scalar("q\tx")),
                ("f", &scalar("")),
                ("g", &scalar("1.50")),
            ]
        );
        assert_eq!(entries[1].position, Position { line: 3, column: 1 });
    }

    #[test]
    fn nested_shapes_are_kept() {
        let entries = decode_mapping("t: [a, \"b c\"]\nm: {k: v}\n", 2).unwrap();
        assert_eq!(entries[0].value, Node::Seq(vec![scalar("a"), scalar("b c")]));
        assert_eq!(entries[1].value, Node::Map(vec![(scalar("k"), scalar("v"))]));
    }

    #[test]
    fn empty_documents_are_empty_mappings() {
        assert_eq!(decode_mapping("", 2).unwrap(), Vec::new());
        assert_eq!(decode_mapping("# only a comment\n", 2).unwrap(), Vec::new());
    }

    #[test]
    fn failures_carry_file_positions_only() {
        let error = decode_mapping("name: leaked-secret\ndescription: [unterminated\n", 2).unwrap_err();
        let position = error.position.unwrap();
        assert!(position.line >= 3, "{position:?}");
        assert!(position.column >= 1, "{position:?}");
        for text in [
            "just text",
            "- a\n- b",
            "a: *x",
            "a: 1\na: 2",
            "[a]: 1",
            "a: 1\n...\nb: 2\n",
        ] {
            assert!(decode_mapping(text, 2).is_err(), "{text:?}");
        }
        let duplicate = decode_mapping("a: 1\nb: 2\na: 3\n", 2).unwrap_err();
        assert_eq!(duplicate.position, Some(Position { line: 4, column: 1 }));
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = format!("a: {}{}", "[".repeat(200), "]".repeat(200));
        assert!(decode_mapping(&deep, 2).is_err());
    }
}
