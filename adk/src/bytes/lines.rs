//! Line splitting shared by every reader: lines are what `split('\n')` yields on the decoded
//! text, so `""` has no lines, `"a\nb\n"` has three (the last one empty) and `\r` is kept.

use std::io;
use std::ops::Range;

use bytes::Bytes;
use futures_util::StreamExt;

use super::ByteStream;

/// Decodes one line. Invalid UTF-8 becomes U+FFFD; a newline byte is ASCII and never part of an
/// invalid sequence, so decoding line by line yields the same lines as decoding the whole text.
pub(crate) fn decode_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Streams `stream` once and hands every line to `visit` with its 0-based index, holding at most
/// one line plus one chunk in memory. `visit` returns `false` to stop early.
pub(crate) async fn for_each_line(
    mut stream: ByteStream,
    mut visit: impl FnMut(u64, &[u8]) -> bool,
) -> io::Result<()> {
    let mut pending: Vec<u8> = Vec::new();
    let mut index: u64 = 0;
    let mut saw_any_byte = false;
    while let Some(chunk) = stream.next().await {
        let chunk: Bytes = chunk?;
        if chunk.is_empty() {
            continue;
        }
        saw_any_byte = true;
        let mut rest: &[u8] = &chunk;
        while let Some(position) = rest.iter().position(|byte| *byte == b'\n') {
            pending.extend_from_slice(&rest[..position]);
            if !visit(index, &pending) {
                return Ok(());
            }
            pending.clear();
            index += 1;
            rest = &rest[position + 1..];
        }
        pending.extend_from_slice(rest);
    }
    if saw_any_byte {
        visit(index, &pending);
    }
    Ok(())
}

/// Collects the decoded lines whose indexes fall in `range`, stopping once past it.
pub(crate) async fn collect_lines(
    stream: ByteStream,
    range: Range<u64>,
) -> io::Result<Vec<String>> {
    let mut lines = Vec::new();
    if range.start >= range.end {
        return Ok(lines);
    }
    for_each_line(stream, |index, line| {
        if index >= range.start {
            lines.push(decode_line(line));
        }
        index + 1 < range.end
    })
    .await?;
    Ok(lines)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    fn chunks(parts: &[&'static [u8]]) -> ByteStream {
        let owned: Vec<io::Result<Bytes>> = parts
            .iter()
            .map(|part| Ok(Bytes::from_static(part)))
            .collect();
        Box::pin(futures_util::stream::iter(owned))
    }

    #[tokio::test]
    async fn lines_split_across_chunks_are_joined() {
        let lines = collect_lines(chunks(&[b"al", b"pha\nbe", b"ta\r\n", b"gamma"]), 0..10)
            .await
            .unwrap();
        assert_eq!(lines, vec!["alpha", "beta\r", "gamma"]);
    }

    #[tokio::test]
    async fn a_trailing_newline_yields_a_final_empty_line() {
        let lines = collect_lines(chunks(&[b"a\n"]), 0..10).await.unwrap();
        assert_eq!(lines, vec!["a", ""]);
    }

    #[tokio::test]
    async fn only_the_requested_range_is_collected() {
        let lines = collect_lines(chunks(&[b"0\n1\n2\n3"]), 1..3).await.unwrap();
        assert_eq!(lines, vec!["1", "2"]);
    }
}
