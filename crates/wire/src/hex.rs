//! Hex text for bytes, the one encoder and decoder of the workspace: file handles and verifiers in
//! JSON summaries, fuzz case files, `rig decode --hex`, `rig scenarios --root-fh`.

use std::fmt;

/// Why text is not hex.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HexError {
    /// Two digits make a byte; the text has an odd length (in bytes).
    OddLength { length: usize },
    /// A character that is not a hex digit, at this byte index of the text.
    BadDigit { index: usize, found: char },
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HexError::OddLength { length } => {
                write!(f, "odd number of hex digits ({length}): two make a byte")
            }
            HexError::BadDigit { index, found } => {
                write!(f, "{found:?} at index {index} is not a hex digit")
            }
        }
    }
}

impl std::error::Error for HexError {}

/// Lower-case hex of `bytes`, two digits a byte.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// The bytes of hex `text` (digits of either case, nothing else).
pub fn decode(text: &str) -> Result<Vec<u8>, HexError> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return Err(HexError::OddLength {
            length: digits.len(),
        });
    }
    let nibble = |index: usize| {
        char::from(digits[index])
            .to_digit(16)
            .map(|d| d as u8)
            .ok_or_else(|| HexError::BadDigit {
                index,
                // The whole character the byte belongs to (text need not be ASCII).
                found: text
                    .char_indices()
                    .find(|(at, c)| at + c.len_utf8() > index)
                    .map_or(char::REPLACEMENT_CHARACTER, |(_, c)| c),
            })
    };
    (0..digits.len() / 2)
        .map(|i| Ok(nibble(2 * i)? << 4 | nibble(2 * i + 1)?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let text = encode(&all);
        assert_eq!(&text[..8], "00010203");
        assert_eq!(&text[text.len() - 4..], "feff");
        assert_eq!(decode(&text), Ok(all));
        assert_eq!(decode("0A"), Ok(vec![10]));
        assert_eq!(decode(""), Ok(vec![]));
    }

    #[test]
    fn refuses_odd_lengths_and_non_digits_saying_where() {
        assert_eq!(decode("abc"), Err(HexError::OddLength { length: 3 }));
        assert_eq!(
            decode("0g"),
            Err(HexError::BadDigit {
                index: 1,
                found: 'g'
            })
        );
        // A sign is not a digit (u8::from_str_radix would take "+f").
        assert!(decode("+f").is_err());
        assert_eq!(
            decode("aéb"),
            Err(HexError::BadDigit {
                index: 1,
                found: 'é'
            })
        );
    }
}
