//! Server-sent events split into their `data` payloads, bounded per line.
//!
//! SSE is parsed here rather than with a crate: the protocol is a handful of line rules, and the
//! parser has to work on raw byte chunks that may split a line (or a UTF-8 character) anywhere.

use super::http::excerpt;

/// A line (or an event's data) longer than the cap: the parser stopped at the cap, without
/// holding the rest. Each provider turns it into its own `ResponseTooLarge` error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineTooLong {
    /// The cap, in bytes.
    pub(crate) limit: usize,
    /// The start of what was received.
    pub(crate) excerpt: String,
}

/// One server-sent event, as far as the model protocols care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseEvent {
    /// The `data` of an ordinary event: a chunk's JSON, or `[DONE]`.
    Data(String),
    /// An error the server sent outside a chunk: the data of an `event: error` event, or the
    /// value of an `error:` line (llama.cpp's server writes its errors that way).
    Error(String),
}

/// Splits a byte stream into its events, holding at most `max_line` bytes of one line or event.
///
/// Linear in its input: bytes already searched for a line end are not searched again when the
/// next chunk arrives, so one long line sent in many small chunks costs its length, not its
/// length squared. A line (or an event's data) longer than `max_line` is an error as soon as
/// that many bytes arrived, so memory stays bounded by the cap whatever the server sends.
#[derive(Debug)]
pub(crate) struct SseParser {
    max_line: usize,
    pending: Vec<u8>,
    /// How many leading bytes of `pending` are known to hold no line end.
    scanned: usize,
    data: Option<String>,
    /// Whether the event being read was named `error`.
    error_event: bool,
}

impl SseParser {
    pub(crate) fn new(max_line: usize) -> Self {
        Self {
            max_line,
            pending: Vec::new(),
            scanned: 0,
            data: None,
            error_event: false,
        }
    }

    /// Feeds bytes; returns every event they completed, in order.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, LineTooLong> {
        let mut events = Vec::new();
        // Fed in pieces no larger than the cap, so `pending` never holds more than twice it.
        for piece in bytes.chunks(self.max_line.max(1)) {
            self.pending.extend_from_slice(piece);
            let mut consumed = 0;
            let mut search_from = self.scanned;
            while let Some(offset) = self.pending[search_from..]
                .iter()
                .position(|&byte| byte == b'\n')
            {
                let end = search_from + offset;
                let line = &self.pending[consumed..end];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                self.check_length(line)?;
                let line = String::from_utf8_lossy(line).into_owned();
                consumed = end + 1;
                search_from = consumed;
                if let Some(event) = self.line(&line)? {
                    events.push(event);
                }
            }
            self.pending.drain(..consumed);
            self.scanned = self.pending.len();
            self.check_length(&self.pending)?;
        }
        Ok(events)
    }

    /// The event the stream ended inside, if any.
    pub(crate) fn finish(&mut self) -> Result<Option<SseEvent>, LineTooLong> {
        let rest = std::mem::take(&mut self.pending);
        self.scanned = 0;
        if !rest.is_empty() {
            let line = String::from_utf8_lossy(&rest).into_owned();
            if let Some(event) = self.line(line.trim_end_matches('\r'))? {
                return Ok(Some(event));
            }
        }
        Ok(self.take_event())
    }

    fn check_length(&self, line: &[u8]) -> Result<(), LineTooLong> {
        if line.len() > self.max_line {
            return Err(LineTooLong {
                limit: self.max_line,
                excerpt: excerpt(line),
            });
        }
        Ok(())
    }

    fn take_event(&mut self) -> Option<SseEvent> {
        let error_event = std::mem::take(&mut self.error_event);
        let data = self.data.take()?;
        Some(if error_event {
            SseEvent::Error(data)
        } else {
            SseEvent::Data(data)
        })
    }

    fn line(&mut self, line: &str) -> Result<Option<SseEvent>, LineTooLong> {
        if line.is_empty() {
            return Ok(self.take_event());
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    if data.len() + 1 + value.len() > self.max_line {
                        return Err(LineTooLong {
                            limit: self.max_line,
                            excerpt: excerpt(data.as_bytes()),
                        });
                    }
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.error_event = value == "error",
            // Not an SSE field: llama.cpp's server reports a failure mid-stream as `error: {..}`.
            "error" => return Ok(Some(SseEvent::Error(value.to_owned()))),
            // `id` and `retry` carry nothing the model protocols use; an event's name is in its
            // data's `type` for Anthropic's events, so only `error` is kept.
            _ => {}
        }
        Ok(None)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_across_chunks_are_reassembled() {
        let stream = "data: {\"a\":1}\r\n\r\n: keep-alive\n\ndata: first\ndata: second\n\nevent: x\ndata: é\n\n";
        let bytes = stream.as_bytes();
        for split in 0..bytes.len() {
            let mut parser = SseParser::new(1024);
            let mut events = parser.push(&bytes[..split]).unwrap();
            events.extend(parser.push(&bytes[split..]).unwrap());
            assert_eq!(
                events,
                ["{\"a\":1}", "first\nsecond", "é"].map(|data| SseEvent::Data(data.into())),
                "split at {split}"
            );
            assert_eq!(parser.finish().unwrap(), None);
        }
    }

    #[test]
    fn an_event_cut_off_by_the_end_of_the_stream_is_still_delivered() {
        let mut parser = SseParser::new(1024);
        assert!(parser.push(b"data: [DONE]").unwrap().is_empty());
        assert_eq!(
            parser.finish().unwrap(),
            Some(SseEvent::Data("[DONE]".into()))
        );
    }

    #[test]
    fn one_long_line_in_small_chunks_is_parsed_in_linear_time() {
        // Quadratic rescanning made this take seconds; linear parsing takes milliseconds. The
        // figure lives in the bench; here the result is checked.
        let line = format!("data: {}\n\n", "x".repeat(1 << 20));
        let mut parser = SseParser::new(2 << 20);
        let mut events = Vec::new();
        for piece in line.as_bytes().chunks(64) {
            events.extend(parser.push(piece).unwrap());
        }
        assert_eq!(events.len(), 1);
        assert!(matches!(&events[0], SseEvent::Data(data) if data.len() == 1 << 20));
    }

    #[test]
    fn a_line_past_the_cap_fails_once_the_cap_is_reached_with_a_short_excerpt() {
        let mut parser = SseParser::new(1000);
        let mut failed = None;
        for (sent, piece) in std::iter::repeat_n([b'x'; 100], 100).enumerate() {
            if let Err(error) = parser.push(&piece) {
                failed = Some((sent, error));
                break;
            }
        }
        let (sent, error) = failed.unwrap();
        assert_eq!(sent, 10, "fails on the piece that crosses the cap");
        assert_eq!(error.limit, 1000);
        assert!(error.excerpt.len() < 1024, "{error:?}");
        // A whole line longer than the cap in one piece, and many data lines of one event.
        assert!(SseParser::new(10).push(b"data: 0123456789\n\n").is_err());
        let many = "data: 12345\n".repeat(10);
        assert!(SseParser::new(30).push(many.as_bytes()).is_err());
    }
}
