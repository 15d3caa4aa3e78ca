//! Frontmatter YAML decoded at event level, so scalars keep their source text.
//!
//! `gray_matter`'s YAML engine (yaml-rust2) converts scalars to typed values
//! (`123` → integer, `null` → nothing) and its errors carry the parser's words; the
//! spec wants source text and value-free errors with file positions. So the same
//! parser is driven through its event API here and every failure is reduced to a
//! position.

use std::collections::HashSet;

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

/// Why the frontmatter is not a usable YAML mapping; only a position or counts,
/// never content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not a YAML mapping of the expected shape (or not YAML at all).
    Malformed {
        /// Where the parser stopped, when known.
        position: Option<Position>,
    },
    /// More top-level keys than the cap.
    TooManyKeys {
        /// The number of top-level keys.
        count: usize,
        /// The cap.
        cap: usize,
    },
}

/// Deepest nesting accepted (frontmatter is flat; this only guards the recursion).
const MAX_DEPTH: usize = 64;

/// Decodes `frontmatter` (which starts on file line `first_line`) as a mapping. An
/// empty document is an empty mapping. Aliases, several documents, non-scalar or
/// duplicate top-level keys are malformed; more than `max_keys` top-level keys are
/// refused with their count. The cost is linear in the frontmatter's length.
pub(crate) fn decode_mapping(
    frontmatter: &str,
    first_line: usize,
    max_keys: usize,
) -> Result<Vec<Entry>, Refused> {
    let mut reader = Reader {
        parser: Parser::new_from_str(frontmatter),
        first_line,
        max_keys,
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
    max_keys: usize,
}

impl Reader<'_> {
    fn next(&mut self) -> Result<(Event, Marker), Refused> {
        self.parser.next_token().map_err(|error| {
            let mark = *error.marker();
            self.at(mark)
        })
    }

    /// The next event of a collection, or `None` at `end`, the event that closes it.
    fn next_before(&mut self, end: &Event) -> Result<Option<(Event, Marker)>, Refused> {
        let (event, mark) = self.next()?;
        Ok((event != *end).then_some((event, mark)))
    }

    fn at(&self, mark: Marker) -> Refused {
        Refused::Malformed {
            position: Some(self.position(mark)),
        }
    }

    fn position(&self, mark: Marker) -> Position {
        Position {
            line: mark.line() + self.first_line - 1,
            column: mark.col() + 1,
        }
    }

    fn top_level(&mut self) -> Result<Vec<Entry>, Refused> {
        let mut entries: Vec<Entry> = Vec::new();
        // Duplicate detection by hash, so the whole decode stays linear.
        let mut seen: HashSet<String> = HashSet::new();
        loop {
            let (event, mark) = self.next()?;
            let key = match event {
                Event::MappingEnd => return Ok(entries),
                Event::Scalar(text, ..) => text,
                _ => return Err(self.at(mark)),
            };
            if entries.len() == self.max_keys {
                return Err(self.count_keys(entries.len() + 1));
            }
            if !seen.insert(key.clone()) {
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

    /// Past the cap, with `counted` keys seen (the last one's value not read yet):
    /// counts the remaining top-level keys without keeping anything, so the refusal
    /// can state the total. A syntax error on the way wins, as the document is
    /// malformed anyway.
    fn count_keys(&mut self, mut counted: usize) -> Refused {
        let mut depth = 0_usize;
        // Whether the next event at depth 0 is a value (a key was just counted).
        let mut value_next = true;
        loop {
            let (event, mark) = match self.next() {
                Ok(next) => next,
                Err(refused) => return refused,
            };
            match event {
                Event::MappingStart(..) | Event::SequenceStart(..) => depth += 1,
                Event::MappingEnd | Event::SequenceEnd if depth > 0 => depth -= 1,
                Event::MappingEnd => {
                    return Refused::TooManyKeys {
                        count: counted,
                        cap: self.max_keys,
                    };
                }
                Event::Scalar(..) | Event::Alias(..) => {}
                _ => return self.at(mark),
            }
            if depth == 0 {
                // A node just ended at the top level: a value, or the next key.
                if !value_next {
                    counted += 1;
                }
                value_next = !value_next;
            }
        }
    }

    fn node(&mut self, event: Event, mark: Marker, depth: usize) -> Result<Node, Refused> {
        if depth > MAX_DEPTH {
            return Err(self.at(mark));
        }
        match event {
            Event::Scalar(text, ..) => Ok(Node::Scalar(text)),
            Event::SequenceStart(..) => {
                let mut items = Vec::new();
                while let Some((event, mark)) = self.next_before(&Event::SequenceEnd)? {
                    items.push(self.node(event, mark, depth + 1)?);
                }
                Ok(Node::Seq(items))
            }
            Event::MappingStart(..) => {
                let mut pairs = Vec::new();
                while let Some((event, mark)) = self.next_before(&Event::MappingEnd)? {
                    let key = self.node(event, mark, depth + 1)?;
                    let (event, mark) = self.next()?;
                    let value = self.node(event, mark, depth + 1)?;
                    pairs.push((key, value));
                }
                Ok(Node::Map(pairs))
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

    const CAP: usize = 1_000;

    fn position(refused: Refused) -> Option<Position> {
        match refused {
            Refused::Malformed { position } => position,
            Refused::TooManyKeys { .. } => panic!("{refused:?}"),
        }
    }

    fn scalar(text: &str) -> Node {
        Node::Scalar(text.to_owned())
    }

    #[test]
    fn scalars_keep_their_source_text() {
        let entries = decode_mapping(
            "a: 123\nb: null\nc: 2026-08-28T12:00:00Z\nd: true\ne: \"q\\tx\"\nf:\ng: 1.50\n",
            2,
            CAP,
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
        let entries = decode_mapping("t: [a, \"b c\"]\nm: {k: v}\n", 2, CAP).unwrap();
        assert_eq!(entries[0].value, Node::Seq(vec![scalar("a"), scalar("b c")]));
        assert_eq!(entries[1].value, Node::Map(vec![(scalar("k"), scalar("v"))]));
    }

    #[test]
    fn empty_documents_are_empty_mappings() {
        assert_eq!(decode_mapping("", 2, CAP).unwrap(), Vec::new());
        assert_eq!(decode_mapping("# only a comment\n", 2, CAP).unwrap(), Vec::new());
    }

    #[test]
    fn failures_carry_file_positions_only() {
        let error = decode_mapping("name: leaked-secret\ndescription: [unterminated\n", 2, CAP).unwrap_err();
        let at = position(error).unwrap();
        assert!(at.line >= 3, "{at:?}");
        assert!(at.column >= 1, "{at:?}");
        for text in [
            "just text",
            "- a\n- b",
            "a: *x",
            "a: 1\na: 2",
            "[a]: 1",
            "a: 1\n...\nb: 2\n",
        ] {
            assert!(decode_mapping(text, 2, CAP).is_err(), "{text:?}");
        }
        let duplicate = decode_mapping("a: 1\nb: 2\na: 3\n", 2, CAP).unwrap_err();
        assert_eq!(position(duplicate), Some(Position { line: 4, column: 1 }));
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = format!("a: {}{}", "[".repeat(200), "]".repeat(200));
        assert!(decode_mapping(&deep, 2, CAP).is_err());
    }

    fn keys(n: usize) -> String {
        (0..n).map(|i| format!("k{i}: v\n")).collect()
    }

    #[test]
    fn the_key_cap_accepts_the_cap_and_counts_every_key_past_it() {
        assert_eq!(decode_mapping(&keys(3), 2, 3).unwrap().len(), 3);
        let nested = format!("{}m: {{a: [1, {{b: 2}}]}}\nz: [x]\n", keys(3));
        assert_eq!(
            decode_mapping(&nested, 2, 3),
            Err(Refused::TooManyKeys { count: 5, cap: 3 })
        );
        assert_eq!(
            decode_mapping(&keys(10), 2, 3),
            Err(Refused::TooManyKeys { count: 10, cap: 3 })
        );
        // A syntax error past the cap is still reported as such.
        let broken = format!("{}bad: [unterminated\n", keys(5));
        assert!(matches!(
            decode_mapping(&broken, 2, 3),
            Err(Refused::Malformed { position: Some(_) })
        ));
    }

    #[test]
    fn duplicates_are_found_among_many_keys() {
        let text = format!("{}k7: again\n", keys(CAP - 1));
        assert_eq!(
            position(decode_mapping(&text, 2, CAP).unwrap_err()),
            Some(Position {
                line: CAP + 1,
                column: 1
            })
        );
    }
}
