//! A small server-sent-events parser: bytes in, `(event, data)` pairs out.
//!
//! Follows the WHATWG event-stream rules the providers rely on: lines end in LF, CRLF
//! or CR (also when split across reads), `:` starts a comment, `data` lines join with
//! `\n`, a blank line dispatches, a leading BOM is dropped. `id` and `retry` are
//! ignored (nothing reconnects). At the end of the body a last event whose lines were
//! complete is dispatched even without the closing blank line; an event whose last
//! line is torn is dropped.

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event` field (empty when absent).
    pub(crate) event: String,
    /// The `data` lines joined with `\n`.
    pub(crate) data: String,
}

/// Incremental parser state.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    skip_lf: bool,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feeds bytes; returns the events completed by them.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &byte in bytes {
            if self.skip_lf {
                self.skip_lf = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.skip_lf = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(byte),
            }
        }
        out
    }

    /// Ends the body: dispatches a last event whose lines were all complete; an event
    /// with a torn last line is dropped whole.
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        let torn = !self.line.is_empty();
        self.line.clear();
        let event = self.dispatch();
        if torn { None } else { event }
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let raw = std::mem::take(&mut self.line);
        let mut text = String::from_utf8_lossy(&raw).into_owned();
        if !self.started {
            self.started = true;
            if let Some(rest) = text.strip_prefix('\u{feff}') {
                text = rest.to_owned();
            }
        }
        if text.is_empty() {
            if let Some(event) = self.dispatch() {
                out.push(event);
            }
            return;
        }
        if text.starts_with(':') {
            return;
        }
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_str(), ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        let had_data = std::mem::replace(&mut self.has_data, false);
        had_data.then_some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.to_owned(),
            data: data.to_owned(),
        }
    }

    fn parse_in_pieces(body: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for chunk in body.chunks(piece) {
            out.extend(parser.push(chunk));
        }
        out.extend(parser.finish());
        out
    }

    #[test]
    fn events_data_comments_and_line_endings() {
        let body = "\u{feff}: keep-alive\nevent: ping\ndata: {}\n\ndata: a\r\ndata: b\r\n\r\nid: 7\nretry: 10\ndata:c\r\rdata: [DONE]\n\n";
        let expected = vec![ev("ping", "{}"), ev("", "a\nb"), ev("", "c"), ev("", "[DONE]")];
        for piece in [1, 2, 3, 7, body.len()] {
            assert_eq!(parse_in_pieces(body.as_bytes(), piece), expected, "piece {piece}");
        }
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        assert_eq!(parse_in_pieces(b"event: x\n\n: c\n\n", 4), vec![]);
    }

    #[test]
    fn utf8_split_across_reads_survives() {
        let body = "data: héllo – ok\n\n".as_bytes();
        assert_eq!(parse_in_pieces(body, 1), vec![ev("", "héllo – ok")]);
    }

    #[test]
    fn end_of_body_dispatches_complete_lines_only() {
        assert_eq!(parse_in_pieces(b"data: [DONE]\n", 5), vec![ev("", "[DONE]")]);
        assert_eq!(parse_in_pieces(b"data: [DO", 5), vec![]);
        assert_eq!(parse_in_pieces(b"data: a\ndata: {\"tor", 5), vec![]);
    }
}
