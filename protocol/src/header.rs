//! Request and response headers.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

/// A decoded request header. `client_id` stays a plain (non-compact)
/// nullable string even in header v2, as Kafka defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
}

impl RequestHeader {
    /// Reads the fixed part common to every header version: enough to answer
    /// with an error even for an unknown API or version.
    pub fn decode_prefix(r: &mut Reader) -> DecodeResult<(i16, i16, i32)> {
        Ok((
            r.i16("api_key")?,
            r.i16("api_version")?,
            r.i32("correlation_id")?,
        ))
    }

    /// Reads the rest of a header of `header_version` (1 or 2) after
    /// [`RequestHeader::decode_prefix`].
    pub fn decode_rest(
        r: &mut Reader,
        (api_key, api_version, correlation_id): (i16, i16, i32),
        header_version: i16,
    ) -> DecodeResult<RequestHeader> {
        let client_id = if header_version >= 1 {
            r.nullable_string("client_id", false)?
        } else {
            None
        };
        if header_version >= 2 {
            r.skip_tagged_fields()?;
        }
        Ok(RequestHeader {
            api_key,
            api_version,
            correlation_id,
            client_id,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, header_version: i16) {
        w.put_i16(self.api_key);
        w.put_i16(self.api_version);
        w.put_i32(self.correlation_id);
        if header_version >= 1 {
            w.put_nullable_string(self.client_id.as_deref(), false);
        }
        if header_version >= 2 {
            w.put_empty_tagged_fields();
        }
    }
}

/// Writes a response header of `header_version` (0 or 1).
pub fn encode_response_header(w: &mut BytesMut, correlation_id: i32, header_version: i16) {
    w.put_i32(correlation_id);
    if header_version >= 1 {
        w.put_empty_tagged_fields();
    }
}

/// Reads a response header of `header_version`; returns the correlation id.
pub fn decode_response_header(r: &mut Reader, header_version: i16) -> DecodeResult<i32> {
    let id = r.i32("correlation_id")?;
    if header_version >= 1 {
        r.skip_tagged_fields()?;
    }
    Ok(id)
}
