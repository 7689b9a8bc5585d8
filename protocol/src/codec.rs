//! Bounds-checked primitives of the Kafka protocol, decoded from `Bytes` by
//! slicing and encoded into `BytesMut`.
//!
//! Nothing here trusts a length or count from the wire: every one is checked
//! against the bytes that remain *before* anything is allocated, so a frame
//! can never make the broker reserve more than the frame itself holds.
//! Byte fields (record data, keys) are returned as `Bytes` slices of the
//! frame, never copied.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Why a frame could not be decoded. The connection answers with Kafka's
/// error code where the request header was readable, or closes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("frame ended while reading {field}: needed {needed} bytes, {remaining} remain")]
    Truncated {
        field: &'static str,
        needed: usize,
        remaining: usize,
    },
    #[error("invalid length {length} for {field}")]
    InvalidLength { field: &'static str, length: i64 },
    #[error("{field} claims {count} elements but only {remaining} bytes remain")]
    CountTooLarge {
        field: &'static str,
        count: i64,
        remaining: usize,
    },
    #[error("varint for {field} is longer than 10 bytes")]
    VarintTooLong { field: &'static str },
    #[error("{field} is not valid UTF-8")]
    InvalidUtf8 { field: &'static str },
    #[error("null {field} where a value is required")]
    UnexpectedNull { field: &'static str },
    #[error("{0}")]
    Invalid(String),
}

pub type DecodeResult<T> = Result<T, DecodeError>;

/// Smallest encoding of a string: an INT16 length or a one-byte compact one.
pub const fn min_string_bytes(flexible: bool) -> usize {
    if flexible {
        1
    } else {
        2
    }
}

/// Smallest encoding of an array: an INT32 count or a one-byte compact one.
pub const fn min_array_bytes(flexible: bool) -> usize {
    if flexible {
        1
    } else {
        4
    }
}

/// Smallest encoding of a byte field: an INT32 length or a one-byte compact
/// one.
pub const fn min_bytes_bytes(flexible: bool) -> usize {
    if flexible {
        1
    } else {
        4
    }
}

/// Smallest tagged-field section: one byte in flexible versions, else none.
pub const fn min_tags_bytes(flexible: bool) -> usize {
    if flexible {
        1
    } else {
        0
    }
}

/// A cursor over one frame.
#[derive(Debug, Clone)]
pub struct Reader {
    buf: Bytes,
}

impl Reader {
    pub fn new(buf: Bytes) -> Self {
        Reader { buf }
    }
    pub fn remaining(&self) -> usize {
        self.buf.remaining()
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// The unread bytes, without consuming them.
    pub fn rest(&self) -> &Bytes {
        &self.buf
    }

    fn need(&self, field: &'static str, n: usize) -> DecodeResult<()> {
        if self.buf.remaining() < n {
            return Err(DecodeError::Truncated {
                field,
                needed: n,
                remaining: self.buf.remaining(),
            });
        }
        Ok(())
    }

    pub fn i8(&mut self, field: &'static str) -> DecodeResult<i8> {
        self.need(field, 1)?;
        Ok(self.buf.get_i8())
    }
    pub fn bool(&mut self, field: &'static str) -> DecodeResult<bool> {
        Ok(self.i8(field)? != 0)
    }
    pub fn i16(&mut self, field: &'static str) -> DecodeResult<i16> {
        self.need(field, 2)?;
        Ok(self.buf.get_i16())
    }
    pub fn u16(&mut self, field: &'static str) -> DecodeResult<u16> {
        self.need(field, 2)?;
        Ok(self.buf.get_u16())
    }
    pub fn i32(&mut self, field: &'static str) -> DecodeResult<i32> {
        self.need(field, 4)?;
        Ok(self.buf.get_i32())
    }
    pub fn u32(&mut self, field: &'static str) -> DecodeResult<u32> {
        self.need(field, 4)?;
        Ok(self.buf.get_u32())
    }
    pub fn i64(&mut self, field: &'static str) -> DecodeResult<i64> {
        self.need(field, 8)?;
        Ok(self.buf.get_i64())
    }
    pub fn f64(&mut self, field: &'static str) -> DecodeResult<f64> {
        self.need(field, 8)?;
        Ok(self.buf.get_f64())
    }
    pub fn uuid(&mut self, field: &'static str) -> DecodeResult<[u8; 16]> {
        self.need(field, 16)?;
        let mut u = [0u8; 16];
        self.buf.copy_to_slice(&mut u);
        Ok(u)
    }

    /// Unsigned LEB128 varint, at most 5 bytes for 32 bits.
    pub fn uvarint(&mut self, field: &'static str) -> DecodeResult<u32> {
        let v = self.uvarlong(field)?;
        u32::try_from(v).map_err(|_| DecodeError::InvalidLength {
            field,
            length: v as i64,
        })
    }
    pub fn uvarlong(&mut self, field: &'static str) -> DecodeResult<u64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.i8(field)? as u8;
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError::VarintTooLong { field })
    }
    /// Zig-zag signed varint.
    pub fn varint(&mut self, field: &'static str) -> DecodeResult<i32> {
        let z = self.uvarint(field)?;
        Ok(((z >> 1) as i32) ^ -((z & 1) as i32))
    }
    pub fn varlong(&mut self, field: &'static str) -> DecodeResult<i64> {
        let z = self.uvarlong(field)?;
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }

    /// Takes `n` bytes as a slice of the frame.
    pub fn take(&mut self, field: &'static str, n: usize) -> DecodeResult<Bytes> {
        self.need(field, n)?;
        Ok(self.buf.split_to(n))
    }

    fn length(&mut self, field: &'static str, flexible: bool) -> DecodeResult<Option<usize>> {
        let len: i64 = if flexible {
            self.uvarint(field)? as i64 - 1
        } else {
            self.i16(field)? as i64
        };
        match len {
            -1 => Ok(None),
            l if l < -1 => Err(DecodeError::InvalidLength { field, length: l }),
            l => Ok(Some(l as usize)),
        }
    }

    /// A nullable string: INT16 length (or compact UVARINT length+1).
    pub fn nullable_string(
        &mut self,
        field: &'static str,
        flexible: bool,
    ) -> DecodeResult<Option<String>> {
        let Some(len) = self.length(field, flexible)? else {
            return Ok(None);
        };
        let bytes = self.take(field, len)?;
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| DecodeError::InvalidUtf8 { field })
    }
    pub fn string(&mut self, field: &'static str, flexible: bool) -> DecodeResult<String> {
        self.nullable_string(field, flexible)?
            .ok_or(DecodeError::UnexpectedNull { field })
    }

    /// Nullable bytes: INT32 length (or compact UVARINT length+1), sliced.
    pub fn nullable_bytes(
        &mut self,
        field: &'static str,
        flexible: bool,
    ) -> DecodeResult<Option<Bytes>> {
        let len: i64 = if flexible {
            self.uvarint(field)? as i64 - 1
        } else {
            self.i32(field)? as i64
        };
        match len {
            -1 => Ok(None),
            l if l < -1 => Err(DecodeError::InvalidLength { field, length: l }),
            l => Ok(Some(self.take(field, l as usize)?)),
        }
    }
    pub fn bytes(&mut self, field: &'static str, flexible: bool) -> DecodeResult<Bytes> {
        self.nullable_bytes(field, flexible)?
            .ok_or(DecodeError::UnexpectedNull { field })
    }

    /// An array count (INT32, or compact UVARINT count+1), checked against
    /// the remaining bytes assuming each element takes at least
    /// `min_element_bytes`. `None` for a null array.
    pub fn array_len(
        &mut self,
        field: &'static str,
        flexible: bool,
        min_element_bytes: usize,
    ) -> DecodeResult<Option<usize>> {
        let count: i64 = if flexible {
            self.uvarint(field)? as i64 - 1
        } else {
            self.i32(field)? as i64
        };
        if count == -1 {
            return Ok(None);
        }
        if count < -1 {
            return Err(DecodeError::InvalidLength {
                field,
                length: count,
            });
        }
        let min = min_element_bytes.max(1) as i64;
        if count.saturating_mul(min) > self.remaining() as i64 {
            return Err(DecodeError::CountTooLarge {
                field,
                count,
                remaining: self.remaining(),
            });
        }
        Ok(Some(count as usize))
    }

    /// Reads an array whose elements `read` decodes; null reads as empty.
    pub fn array<T>(
        &mut self,
        field: &'static str,
        flexible: bool,
        min_element_bytes: usize,
        read: impl FnMut(&mut Reader) -> DecodeResult<T>,
    ) -> DecodeResult<Vec<T>> {
        Ok(self
            .nullable_array(field, flexible, min_element_bytes, read)?
            .unwrap_or_default())
    }

    /// Reads a nullable array whose elements `read` decodes; `None` for a
    /// null array.
    pub fn nullable_array<T>(
        &mut self,
        field: &'static str,
        flexible: bool,
        min_element_bytes: usize,
        mut read: impl FnMut(&mut Reader) -> DecodeResult<T>,
    ) -> DecodeResult<Option<Vec<T>>> {
        let Some(n) = self.array_len(field, flexible, min_element_bytes)? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(read(self)?);
        }
        Ok(Some(out))
    }

    /// Skips a tagged-field section (flexible versions). Unknown tags are
    /// ignored, as Kafka requires.
    pub fn skip_tagged_fields(&mut self) -> DecodeResult<()> {
        let n = self.uvarint("tagged fields")?;
        if n as usize > self.remaining() {
            return Err(DecodeError::CountTooLarge {
                field: "tagged fields",
                count: n as i64,
                remaining: self.remaining(),
            });
        }
        for _ in 0..n {
            let _tag = self.uvarint("tag")?;
            let size = self.uvarint("tag size")? as usize;
            self.take("tag value", size)?;
        }
        Ok(())
    }

    /// Reads tagged fields, handing each (tag, value) to `on_tag`.
    pub fn tagged_fields(
        &mut self,
        mut on_tag: impl FnMut(u32, Bytes) -> DecodeResult<()>,
    ) -> DecodeResult<()> {
        let n = self.uvarint("tagged fields")?;
        if n as usize > self.remaining() {
            return Err(DecodeError::CountTooLarge {
                field: "tagged fields",
                count: n as i64,
                remaining: self.remaining(),
            });
        }
        for _ in 0..n {
            let tag = self.uvarint("tag")?;
            let size = self.uvarint("tag size")? as usize;
            let value = self.take("tag value", size)?;
            on_tag(tag, value)?;
        }
        Ok(())
    }
}

/// Parses the value of a known tagged field. The value must be consumed
/// exactly: a size that disagrees with the field's own encoding means the
/// frame is corrupt, and Kafka's decoder would be misaligned by it too.
pub fn parse_tag<T>(
    tag: u32,
    value: Bytes,
    parse: impl FnOnce(&mut Reader) -> DecodeResult<T>,
) -> DecodeResult<T> {
    let mut r = Reader::new(value);
    let out = parse(&mut r)?;
    if !r.is_empty() {
        return Err(DecodeError::Invalid(format!(
            "tagged field {tag} has {} unread bytes",
            r.remaining()
        )));
    }
    Ok(out)
}

/// Writes one tagged field: its tag, its size, then the value.
pub fn put_tag(w: &mut BytesMut, tag: u32, value: &[u8]) {
    w.put_uvarint(tag as u64);
    w.put_uvarint(value.len() as u64);
    w.put_slice(value);
}

/// Encoding helpers on `BytesMut`.
pub trait Writer {
    fn put_uvarint(&mut self, v: u64);
    fn put_varint(&mut self, v: i32);
    fn put_varlong(&mut self, v: i64);
    fn put_nullable_string(&mut self, s: Option<&str>, flexible: bool);
    fn put_string(&mut self, s: &str, flexible: bool);
    fn put_nullable_bytes(&mut self, b: Option<&[u8]>, flexible: bool);
    fn put_array_len(&mut self, n: Option<usize>, flexible: bool);
    fn put_bool(&mut self, v: bool);
    /// An array of int32 (broker ids, partition indexes); `None` is null.
    fn put_i32_array(&mut self, values: Option<&[i32]>, flexible: bool);
    /// An empty tagged-field section.
    fn put_empty_tagged_fields(&mut self);
}

impl Writer for BytesMut {
    fn put_uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.put_u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.put_u8(v as u8);
    }
    fn put_varint(&mut self, v: i32) {
        self.put_uvarint(((v << 1) ^ (v >> 31)) as u32 as u64);
    }
    fn put_varlong(&mut self, v: i64) {
        self.put_uvarint(((v << 1) ^ (v >> 63)) as u64);
    }
    fn put_nullable_string(&mut self, s: Option<&str>, flexible: bool) {
        match (s, flexible) {
            (None, true) => self.put_uvarint(0),
            (None, false) => self.put_i16(-1),
            (Some(s), true) => {
                self.put_uvarint(s.len() as u64 + 1);
                self.put_slice(s.as_bytes());
            }
            (Some(s), false) => {
                self.put_i16(s.len() as i16);
                self.put_slice(s.as_bytes());
            }
        }
    }
    fn put_string(&mut self, s: &str, flexible: bool) {
        self.put_nullable_string(Some(s), flexible);
    }
    fn put_nullable_bytes(&mut self, b: Option<&[u8]>, flexible: bool) {
        match (b, flexible) {
            (None, true) => self.put_uvarint(0),
            (None, false) => self.put_i32(-1),
            (Some(b), true) => {
                self.put_uvarint(b.len() as u64 + 1);
                self.put_slice(b);
            }
            (Some(b), false) => {
                self.put_i32(b.len() as i32);
                self.put_slice(b);
            }
        }
    }
    fn put_array_len(&mut self, n: Option<usize>, flexible: bool) {
        match (n, flexible) {
            (None, true) => self.put_uvarint(0),
            (None, false) => self.put_i32(-1),
            (Some(n), true) => self.put_uvarint(n as u64 + 1),
            (Some(n), false) => self.put_i32(n as i32),
        }
    }
    fn put_bool(&mut self, v: bool) {
        self.put_i8(v as i8);
    }
    fn put_i32_array(&mut self, values: Option<&[i32]>, flexible: bool) {
        self.put_array_len(values.map(<[i32]>::len), flexible);
        for v in values.into_iter().flatten() {
            self.put_i32(*v);
        }
    }
    fn put_empty_tagged_fields(&mut self) {
        self.put_uvarint(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [0i32, 1, -1, 63, -64, 64, 300, i32::MAX, i32::MIN] {
            let mut b = BytesMut::new();
            b.put_varint(v);
            assert_eq!(Reader::new(b.freeze()).varint("v").unwrap(), v);
        }
        for v in [0i64, -1, i64::MAX, i64::MIN, 1 << 40] {
            let mut b = BytesMut::new();
            b.put_varlong(v);
            assert_eq!(Reader::new(b.freeze()).varlong("v").unwrap(), v);
        }
    }

    #[test]
    fn huge_array_counts_are_refused_before_allocating() {
        // i32::MAX elements claimed by a 4-byte frame.
        let mut r = Reader::new(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff]));
        assert!(matches!(
            r.array_len("topics", false, 2),
            Err(DecodeError::CountTooLarge { .. })
        ));
        let mut r = Reader::new(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x0f]));
        assert!(r.array_len("topics", true, 1).is_err());
    }

    #[test]
    fn strings_and_bytes_are_bounds_checked() {
        let mut r = Reader::new(Bytes::from_static(&[0x00, 0x05, b'a']));
        assert!(matches!(
            r.string("s", false),
            Err(DecodeError::Truncated { .. })
        ));
        let mut r = Reader::new(Bytes::from_static(&[0xff, 0xfe]));
        assert!(matches!(
            r.string("s", false),
            Err(DecodeError::InvalidLength { .. })
        ));
        let mut r = Reader::new(Bytes::from_static(&[0x00]));
        assert_eq!(r.nullable_string("s", true).unwrap(), None);
        let mut r = Reader::new(Bytes::from_static(&[
            0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
        ]));
        assert!(matches!(
            r.uvarlong("v"),
            Err(DecodeError::VarintTooLong { .. })
        ));
    }

    #[test]
    fn byte_fields_are_slices_of_the_frame() {
        let frame = Bytes::from_static(&[0, 0, 0, 3, 1, 2, 3]);
        let base = frame.as_ptr();
        let mut r = Reader::new(frame);
        let b = r.bytes("records", false).unwrap();
        assert_eq!(b.as_ptr(), unsafe { base.add(4) }, "no copy");
    }

    #[test]
    fn tagged_fields_skip_unknown_tags() {
        let mut b = BytesMut::new();
        b.put_uvarint(2);
        b.put_uvarint(0);
        b.put_uvarint(3);
        b.put_slice(b"abc");
        b.put_uvarint(7);
        b.put_uvarint(0);
        b.put_u8(42);
        let mut r = Reader::new(b.freeze());
        r.skip_tagged_fields().unwrap();
        assert_eq!(r.i8("after").unwrap(), 42);
    }
}
