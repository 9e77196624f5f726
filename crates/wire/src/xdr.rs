//! XDR (RFC 4506): a bounded [`Reader`] and a [`Writer`], the parse/emit pair every codec here uses.
//!
//! Architecture Invariant: every length read from the wire is checked against both an explicit
//! limit and the bytes actually remaining *before* anything is allocated or sliced; nothing here
//! panics on any input.

use crate::error::{DecodeError, Result};

/// Round `n` up to the next multiple of 4 (RFC 4506 §3: all items are 4-byte aligned).
pub const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// A cursor over untrusted bytes. All reads are bounds-checked; nothing panics.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader over the whole of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn consumed(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The unconsumed bytes (without consuming them).
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Whether every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Take exactly `len` raw bytes (no padding handling).
    pub fn take(&mut self, len: usize, field: &'static str) -> Result<&'a [u8]> {
        if len > self.remaining() {
            return Err(DecodeError::Truncated {
                field,
                needed: len,
                available: self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        Ok(out)
    }

    /// A sub-reader over the next `len` bytes, which are consumed from `self`.
    pub fn sub(&mut self, len: usize, field: &'static str) -> Result<Reader<'a>> {
        Ok(Reader::new(self.take(len, field)?))
    }

    /// Fail unless every byte has been consumed (rustls `Reader::all`-style strictness).
    pub fn finish(&self, field: &'static str) -> Result<()> {
        match self.remaining() {
            0 => Ok(()),
            count => Err(DecodeError::TrailingBytes { field, count }),
        }
    }

    /// Unsigned 32-bit integer (RFC 4506 §4.2).
    pub fn u32(&mut self, field: &'static str) -> Result<u32> {
        let b = self.take(4, field)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Signed 32-bit integer (RFC 4506 §4.1).
    pub fn i32(&mut self, field: &'static str) -> Result<i32> {
        Ok(self.u32(field)? as i32)
    }

    /// Unsigned hyper integer (RFC 4506 §4.5).
    pub fn u64(&mut self, field: &'static str) -> Result<u64> {
        let b = self.take(8, field)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    /// Signed hyper integer (RFC 4506 §4.5).
    pub fn i64(&mut self, field: &'static str) -> Result<i64> {
        Ok(self.u64(field)? as i64)
    }

    /// Boolean (RFC 4506 §4.4): only 0 and 1 are valid.
    pub fn bool(&mut self, field: &'static str) -> Result<bool> {
        match self.u32(field)? {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(DecodeError::BadDiscriminant {
                field,
                value,
                rule: "RFC 4506 §4.4 (boolean is 0 or 1)",
            }),
        }
    }

    /// Skip XDR padding after `len` data bytes, rejecting non-zero residual bytes (RFC 4506 §4.9).
    fn padding(&mut self, len: usize, field: &'static str) -> Result<()> {
        let pad = pad4(len) - len;
        if self.take(pad, field)?.iter().any(|&b| b != 0) {
            return Err(DecodeError::NonZeroPadding { field });
        }
        Ok(())
    }

    /// Fixed-length opaque data (RFC 4506 §4.9), padded to 4 bytes.
    pub fn opaque_fixed(&mut self, len: usize, field: &'static str) -> Result<&'a [u8]> {
        let data = self.take(len, field)?;
        self.padding(len, field)?;
        Ok(data)
    }

    /// Variable-length opaque data (RFC 4506 §4.10) of at most `max` bytes.
    pub fn opaque_var(&mut self, max: u32, field: &'static str) -> Result<&'a [u8]> {
        self.counted_bytes(max, field, "RFC 4506 §4.10 (opaque<max>)")
    }

    /// String (RFC 4506 §4.11) of at most `max` bytes; XDR strings are bytes, not UTF-8.
    pub fn string(&mut self, max: u32, field: &'static str) -> Result<&'a [u8]> {
        self.counted_bytes(max, field, "RFC 4506 §4.11 (string<max>)")
    }

    /// A length word of at most `max` (else the error names `rule`), then that many bytes padded
    /// to 4: the layout opaque<max> and string<max> share.
    #[inline]
    fn counted_bytes(
        &mut self,
        max: u32,
        field: &'static str,
        rule: &'static str,
    ) -> Result<&'a [u8]> {
        let len = self.bounded_length(max, field, rule)?;
        self.opaque_fixed(len as usize, field)
    }

    /// The length word of a variable-length item, at most `max` (else the error names `rule`,
    /// where the bound comes from): every bounded opaque, string and DDP-eligible item reads it.
    #[inline]
    pub(crate) fn bounded_length(
        &mut self,
        max: u32,
        field: &'static str,
        rule: &'static str,
    ) -> Result<u32> {
        let len = self.u32(field)?;
        if len > max {
            return Err(DecodeError::LengthOverLimit {
                field,
                length: len.into(),
                limit: max.into(),
                rule,
            });
        }
        Ok(len)
    }

    /// Optional data (RFC 4506 §4.19): a boolean then, if true, the item.
    pub fn optional<T>(
        &mut self,
        field: &'static str,
        item: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<Option<T>> {
        if self.bool(field)? {
            item(self).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Read an array count, checked against `max` and against what the remaining bytes could hold
    /// when each element takes at least `min_elem` bytes. Returns the count.
    pub fn count(&mut self, max: u32, min_elem: usize, field: &'static str) -> Result<usize> {
        let n = self.u32(field)?;
        if n > max {
            return Err(DecodeError::LengthOverLimit {
                field,
                length: n.into(),
                limit: max.into(),
                rule: "RFC 4506 §4.13 (array<max>)",
            });
        }
        let n = n as usize;
        if min_elem > 0 && n > self.remaining() / min_elem {
            return Err(DecodeError::Truncated {
                field,
                needed: n.saturating_mul(min_elem),
                available: self.remaining(),
            });
        }
        Ok(n)
    }

    /// Variable-length array (RFC 4506 §4.13) of at most `max` elements, each at least `min_elem`
    /// bytes on the wire (used to refuse counts the buffer cannot possibly hold).
    pub fn array<T>(
        &mut self,
        max: u32,
        min_elem: usize,
        field: &'static str,
        mut item: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let n = self.count(max, min_elem, field)?;
        let mut out = Vec::with_capacity(n.min(self.remaining() / min_elem.max(1)));
        for _ in 0..n {
            out.push(item(self)?);
        }
        Ok(out)
    }

    /// XDR linked list encoded as optional-data chain (`bool present; item; next`), as RPC-over-RDMA
    /// chunk lists and READDIR entries are. At most `max` entries; more is an error.
    pub fn list<T>(
        &mut self,
        max: usize,
        field: &'static str,
        mut item: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        while self.bool(field)? {
            if out.len() >= max {
                return Err(DecodeError::LengthOverLimit {
                    field,
                    length: out.len() as u64 + 1,
                    limit: max as u64,
                    rule: "RFC 4506 §4.19 (list bounded by decoder limit)",
                });
            }
            out.push(item(self)?);
        }
        Ok(out)
    }
}

/// Appends XDR items to a growable buffer.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Writer::default()
    }

    /// An empty writer with room for `capacity` bytes (one allocation for a message whose
    /// length is known up front).
    pub fn with_capacity(capacity: usize) -> Self {
        Writer {
            buf: Vec::with_capacity(capacity),
        }
    }

    /// The bytes written so far.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Borrow the bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Number of bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Raw bytes, no padding.
    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(bytes);
        self
    }

    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.raw(&v.to_be_bytes())
    }

    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.u32(v as u32)
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.raw(&v.to_be_bytes())
    }

    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.u64(v as u64)
    }

    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u32(v as u32)
    }

    /// Fixed-length opaque: the bytes plus zero padding to 4.
    pub fn opaque_fixed(&mut self, bytes: &[u8]) -> &mut Self {
        self.raw(bytes);
        let pad = pad4(bytes.len()) - bytes.len();
        self.raw(&[0u8; 3][..pad])
    }

    /// Variable-length opaque or string: length, bytes, zero padding.
    pub fn opaque_var(&mut self, bytes: &[u8]) -> &mut Self {
        self.u32(bytes.len() as u32);
        self.opaque_fixed(bytes)
    }

    /// Optional data: present flag then the item.
    pub fn optional<T>(&mut self, v: Option<&T>, item: impl FnOnce(&mut Self, &T)) -> &mut Self {
        self.bool(v.is_some());
        if let Some(v) = v {
            item(self, v);
        }
        self
    }

    /// Counted array.
    pub fn array<T>(&mut self, items: &[T], mut item: impl FnMut(&mut Self, &T)) -> &mut Self {
        self.u32(items.len() as u32);
        for i in items {
            item(self, i);
        }
        self
    }

    /// Optional-data linked list (`bool present; item; ...; bool false`).
    pub fn list<T>(&mut self, items: &[T], mut item: impl FnMut(&mut Self, &T)) -> &mut Self {
        for i in items {
            self.bool(true);
            item(self, i);
        }
        self.bool(false)
    }
}

/// The parse/emit pair every wire type implements (rustls `Codec` shape).
pub trait Xdr: Sized {
    /// Decode one value from the reader, consuming exactly its encoding.
    fn decode(r: &mut Reader<'_>) -> Result<Self>;
    /// Append this value's encoding.
    fn encode(&self, w: &mut Writer);

    /// Encode into a fresh buffer.
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode(&mut w);
        w.into_bytes()
    }

    /// Decode from a buffer that must hold exactly one value (trailing bytes are an error).
    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        let v = Self::decode(&mut r)?;
        r.finish(std::any::type_name::<Self>())?;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip() {
        let mut w = Writer::new();
        w.u32(0xdead_beef).i32(-2).u64(u64::MAX - 1).bool(true);
        let bytes = w.into_bytes();
        assert_eq!(bytes.len(), 4 + 4 + 8 + 4);
        let mut r = Reader::new(&bytes);
        assert_eq!(r.u32("a").unwrap(), 0xdead_beef);
        assert_eq!(r.i32("b").unwrap(), -2);
        assert_eq!(r.u64("c").unwrap(), u64::MAX - 1);
        assert!(r.bool("d").unwrap());
        r.finish("end").unwrap();
    }

    #[test]
    fn opaque_is_padded_and_round_trips() {
        let mut w = Writer::new();
        w.opaque_var(b"abcde");
        let bytes = w.into_bytes();
        assert_eq!(bytes, [0, 0, 0, 5, b'a', b'b', b'c', b'd', b'e', 0, 0, 0]);
        let mut r = Reader::new(&bytes);
        assert_eq!(r.opaque_var(16, "o").unwrap(), b"abcde");
        assert!(r.is_empty());
    }

    #[test]
    fn rejects_non_zero_padding() {
        let bytes = [0, 0, 0, 1, b'x', 0, 1, 0];
        let err = Reader::new(&bytes).opaque_var(16, "o").unwrap_err();
        assert_eq!(err, DecodeError::NonZeroPadding { field: "o" });
        assert!(err.rule().starts_with("RFC 4506"));
    }

    #[test]
    fn rejects_opaque_over_limit_before_reading_it() {
        let bytes = [0xff, 0xff, 0xff, 0xff];
        let err = Reader::new(&bytes).opaque_var(1024, "o").unwrap_err();
        assert!(matches!(
            err,
            DecodeError::LengthOverLimit {
                length: 0xffff_ffff,
                limit: 1024,
                ..
            }
        ));
    }

    #[test]
    fn rejects_array_count_the_buffer_cannot_hold() {
        // count 1000 of u32 elements but only 8 bytes follow
        let bytes = [0, 0, 0x03, 0xe8, 0, 0, 0, 1, 0, 0, 0, 2];
        let err = Reader::new(&bytes)
            .array(4096, 4, "a", |r| r.u32("e"))
            .unwrap_err();
        assert!(matches!(err, DecodeError::Truncated { needed: 4000, .. }));
    }

    #[test]
    fn rejects_bad_boolean() {
        let err = Reader::new(&[0, 0, 0, 2]).bool("flag").unwrap_err();
        assert!(matches!(err, DecodeError::BadDiscriminant { value: 2, .. }));
    }

    #[test]
    fn list_is_bounded() {
        let mut w = Writer::new();
        w.list(&[1u32, 2, 3], |w, v| {
            w.u32(*v);
        });
        let bytes = w.into_bytes();
        let all = Reader::new(&bytes).list(3, "l", |r| r.u32("e")).unwrap();
        assert_eq!(all, vec![1, 2, 3]);
        let err = Reader::new(&bytes)
            .list(2, "l", |r| r.u32("e"))
            .unwrap_err();
        assert!(matches!(
            err,
            DecodeError::LengthOverLimit {
                length: 3,
                limit: 2,
                ..
            }
        ));
    }

    #[test]
    fn sub_reader_and_trailing_bytes() {
        let bytes = [0, 0, 0, 7, 0, 0, 0, 8, 9];
        let mut r = Reader::new(&bytes);
        let mut s = r.sub(8, "s").unwrap();
        assert_eq!(s.u32("x").unwrap(), 7);
        assert_eq!(s.u32("y").unwrap(), 8);
        s.finish("s").unwrap();
        assert_eq!(
            r.finish("r").unwrap_err(),
            DecodeError::TrailingBytes {
                field: "r",
                count: 1
            }
        );
        assert!(r.sub(2, "t").is_err());
    }

    #[test]
    fn truncated_reads_never_panic() {
        let bytes = [1, 2, 3];
        let mut r = Reader::new(&bytes);
        assert!(r.u32("x").is_err());
        assert!(r.u64("y").is_err());
        assert!(r.opaque_fixed(5, "z").is_err());
        assert_eq!(r.remaining(), 3);
    }
}
