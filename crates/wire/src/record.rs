//! ONC RPC record marking over a byte stream (RFC 5531 §11), sans-IO: a driver hands in the
//! bytes a TCP connection gave, in whatever pieces they came, and gets the whole records back;
//! [`encode_record`] frames an outgoing message.
//!
//! Bounded as every decoder here: a fragment's length is checked against the record limit
//! before any byte of it is kept, the fragments of one record are counted, and bytes are only
//! ever copied as they arrive (a record mark claiming 2 GiB allocates nothing).

use std::fmt;

/// RFC 5531 §11: the high bit of the record mark flags the last fragment of a record.
pub const LAST_FRAGMENT: u32 = 0x8000_0000;
/// Most fragments one record may have.
pub const MAX_FRAGMENTS: usize = 64;

/// Why a stream's records can no longer be read (the connection is to be closed).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordError {
    /// The record, with the fragment just announced, would exceed the limit.
    TooLarge { len: u64, limit: usize },
    /// More fragments than [`MAX_FRAGMENTS`] without a last one.
    TooManyFragments { count: usize },
}

impl RecordError {
    /// The rule the stream broke.
    pub fn rule(&self) -> &'static str {
        "RFC 5531 §11 (record marking: a record within the receiver's limits)"
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::TooLarge { len, limit } => write!(
                f,
                "{}: a record of {len}+ bytes, over the {limit}-byte limit",
                self.rule()
            ),
            RecordError::TooManyFragments { count } => write!(
                f,
                "{}: {count} fragments without a last one (limit {MAX_FRAGMENTS})",
                self.rule()
            ),
        }
    }
}

impl std::error::Error for RecordError {}

/// Where the decoder is in the stream.
#[derive(Debug, Clone, Copy)]
enum Part {
    /// Reading a record mark: this many of its four bytes so far.
    Mark { have: usize },
    /// Reading a fragment's body: this many bytes still to come, and whether it is the last.
    Body { remaining: usize, last: bool },
}

/// Reassembles records from a stream's bytes.
#[derive(Debug, Clone)]
pub struct RecordDecoder {
    limit: usize,
    part: Part,
    mark: [u8; 4],
    record: Vec<u8>,
    fragments: usize,
}

impl RecordDecoder {
    /// A decoder for records of at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        RecordDecoder {
            limit,
            part: Part::Mark { have: 0 },
            mark: [0; 4],
            record: Vec::new(),
            fragments: 0,
        }
    }

    /// Take `bytes` (the next bytes of the stream) and hand each record they complete to
    /// `on_record`, in order. After an error the stream is unusable: close it.
    pub fn push(
        &mut self,
        mut bytes: &[u8],
        on_record: &mut dyn FnMut(Vec<u8>),
    ) -> Result<(), RecordError> {
        while !bytes.is_empty() {
            match self.part {
                Part::Mark { have } => {
                    let take = (4 - have).min(bytes.len());
                    self.mark[have..have + take].copy_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    if have + take < 4 {
                        self.part = Part::Mark { have: have + take };
                        continue;
                    }
                    let mark = u32::from_be_bytes(self.mark);
                    let len = (mark & !LAST_FRAGMENT) as usize;
                    let total = self.record.len() as u64 + len as u64;
                    if total > self.limit as u64 {
                        return Err(RecordError::TooLarge {
                            len: total,
                            limit: self.limit,
                        });
                    }
                    self.fragments += 1;
                    let last = mark & LAST_FRAGMENT != 0;
                    if !last && self.fragments >= MAX_FRAGMENTS {
                        return Err(RecordError::TooManyFragments {
                            count: self.fragments,
                        });
                    }
                    self.part = Part::Body {
                        remaining: len,
                        last,
                    };
                }
                Part::Body { remaining, last } => {
                    let take = remaining.min(bytes.len());
                    self.record.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    self.part = Part::Body {
                        remaining: remaining - take,
                        last,
                    };
                }
            }
            // A fragment is done when its body is (at once for a zero-length one).
            if let Part::Body { remaining: 0, last } = self.part {
                self.part = Part::Mark { have: 0 };
                if last {
                    self.fragments = 0;
                    on_record(std::mem::take(&mut self.record));
                }
            }
        }
        Ok(())
    }

    /// Whether the stream stopped between records (nothing of a next one read yet).
    pub fn is_between_records(&self) -> bool {
        matches!(self.part, Part::Mark { have: 0 }) && self.record.is_empty() && self.fragments == 0
    }
}

/// `message` as one record: a single last fragment. `None` when it does not fit a fragment.
pub fn encode_record(message: &[u8]) -> Option<Vec<u8>> {
    let len = u32::try_from(message.len())
        .ok()
        .filter(|&n| n < LAST_FRAGMENT)?;
    let mut out = Vec::with_capacity(4 + message.len());
    out.extend_from_slice(&(len | LAST_FRAGMENT).to_be_bytes());
    out.extend_from_slice(message);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records_of(decoder: &mut RecordDecoder, bytes: &[u8]) -> Result<Vec<Vec<u8>>, RecordError> {
        let mut out = Vec::new();
        decoder.push(bytes, &mut |r| out.push(r))?;
        Ok(out)
    }

    #[test]
    fn records_come_out_whole_however_the_stream_is_cut() {
        let mut stream = encode_record(b"first").unwrap();
        // A second record in two fragments, then an empty record.
        stream.extend_from_slice(&[0, 0, 0, 2, b'a', b'b', 0x80, 0, 0, 1, b'c']);
        stream.extend_from_slice(&encode_record(b"").unwrap());
        let want: Vec<Vec<u8>> = vec![b"first".to_vec(), b"abc".to_vec(), Vec::new()];
        for piece in 1..=stream.len() {
            let mut decoder = RecordDecoder::new(64);
            let mut got = Vec::new();
            for chunk in stream.chunks(piece) {
                got.extend(records_of(&mut decoder, chunk).unwrap());
            }
            assert_eq!(got, want, "pieces of {piece}");
            assert!(decoder.is_between_records());
        }
    }

    #[test]
    fn a_huge_mark_is_refused_before_anything_is_kept() {
        let mut decoder = RecordDecoder::new(64 * 1024);
        assert_eq!(
            records_of(&mut decoder, &[0xff, 0xff, 0xff, 0xff]),
            Err(RecordError::TooLarge {
                len: 0x7fff_ffff,
                limit: 64 * 1024
            })
        );
        // The limit holds over the fragments together, not only per fragment.
        let mut decoder = RecordDecoder::new(4);
        let err = records_of(&mut decoder, &[0, 0, 0, 3, 1, 2, 3, 0x80, 0, 0, 2]).unwrap_err();
        assert_eq!(err, RecordError::TooLarge { len: 5, limit: 4 });
        assert!(err.to_string().starts_with("RFC 5531 §11"));
    }

    #[test]
    fn endless_fragments_are_refused() {
        let mut decoder = RecordDecoder::new(1 << 20);
        let empty_fragment = [0u8, 0, 0, 0];
        let stream: Vec<u8> = empty_fragment.repeat(MAX_FRAGMENTS);
        assert_eq!(
            records_of(&mut decoder, &stream),
            Err(RecordError::TooManyFragments {
                count: MAX_FRAGMENTS
            })
        );
    }

    #[test]
    fn encoding_frames_one_last_fragment() {
        assert_eq!(
            encode_record(b"xyz").unwrap(),
            [0x80, 0, 0, 3, b'x', b'y', b'z']
        );
    }
}
