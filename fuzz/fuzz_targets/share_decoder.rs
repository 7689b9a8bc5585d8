//! Fuzzes the decoders of KIP-932's share-group APIs (`SHARE_GROUP_APIS`),
//! which `request_decoder` cannot reach: it picks rows of `SUPPORTED_APIS`,
//! and the broker serves none of these yet. Once it does, their rows move
//! there and `request_decoder` covers them as the broker runs them; this
//! target then has nothing left to do and goes.
//!
//! Input layout, as `request_decoder`'s: byte 0 picks a row of
//! `SHARE_GROUP_APIS`, byte 1 a version in that row's range; the rest is the
//! frame after the api key and version: correlation id, client id, tagged
//! fields (header v2: every share-group API is flexible), body.
//!
//! Properties checked, beyond "no panic": a message that decodes re-encodes
//! to bytes that decode to the same message, consuming them exactly; the
//! same bytes also go straight to the request and response decoders.

#![no_main]

use std::fmt::Debug;

use bytes::{BufMut, Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use pinlog::protocol::api::{ApiKey, SHARE_GROUP_APIS};
use pinlog::protocol::codec::{DecodeResult, Reader};
use pinlog::protocol::header::RequestHeader;
use pinlog::protocol::messages::*;

/// The `decode`/`encode` pair every message type has.
trait Message: Sized + PartialEq + Debug {
    fn decode_at(r: &mut Reader, version: i16) -> DecodeResult<Self>;
    fn encode_at(&self, w: &mut BytesMut, version: i16);
}

macro_rules! messages {
    ($($t:ty),* $(,)?) => {$(
        impl Message for $t {
            fn decode_at(r: &mut Reader, version: i16) -> DecodeResult<Self> {
                <$t>::decode(r, version)
            }
            fn encode_at(&self, w: &mut BytesMut, version: i16) {
                self.encode(w, version)
            }
        }
    )*};
}

messages!(
    share_group_heartbeat::ShareGroupHeartbeatRequest,
    share_group_heartbeat::ShareGroupHeartbeatResponse,
    share_group_describe::ShareGroupDescribeRequest,
    share_group_describe::ShareGroupDescribeResponse,
    share_fetch::ShareFetchRequest,
    share_fetch::ShareFetchResponse,
    share_acknowledge::ShareAcknowledgeRequest,
    share_acknowledge::ShareAcknowledgeResponse,
    initialize_share_group_state::InitializeShareGroupStateRequest,
    initialize_share_group_state::InitializeShareGroupStateResponse,
    read_share_group_state::ReadShareGroupStateRequest,
    read_share_group_state::ReadShareGroupStateResponse,
    write_share_group_state::WriteShareGroupStateRequest,
    write_share_group_state::WriteShareGroupStateResponse,
    delete_share_group_state::DeleteShareGroupStateRequest,
    delete_share_group_state::DeleteShareGroupStateResponse,
    read_share_group_state_summary::ReadShareGroupStateSummaryRequest,
    read_share_group_state_summary::ReadShareGroupStateSummaryResponse,
    describe_share_group_offsets::DescribeShareGroupOffsetsRequest,
    describe_share_group_offsets::DescribeShareGroupOffsetsResponse,
    alter_share_group_offsets::AlterShareGroupOffsetsRequest,
    alter_share_group_offsets::AlterShareGroupOffsetsResponse,
    delete_share_group_offsets::DeleteShareGroupOffsetsRequest,
    delete_share_group_offsets::DeleteShareGroupOffsetsResponse,
);

/// Decodes `M` from `reader`; when that succeeds, checks that re-encoding
/// round-trips.
fn check<M: Message>(mut reader: Reader, version: i16) {
    let Ok(message) = M::decode_at(&mut reader, version) else {
        return;
    };
    let mut w = BytesMut::new();
    message.encode_at(&mut w, version);
    let mut again = Reader::new(w.freeze());
    let back = M::decode_at(&mut again, version)
        .unwrap_or_else(|e| panic!("v{version}: re-encoded {message:?} does not decode: {e}"));
    assert_eq!(back, message, "v{version}: round trip changed the message");
    assert!(
        again.is_empty(),
        "v{version}: {} bytes left after decoding a re-encoded message",
        again.remaining()
    );
}

/// The request type of `key`, and its response type.
fn check_api(key: ApiKey, version: i16, request: Reader, also_response: bool) {
    macro_rules! pair {
        ($req:ty, $resp:ty) => {{
            if also_response {
                check::<$resp>(request.clone(), version);
            }
            check::<$req>(request, version);
        }};
    }
    match key {
        ApiKey::ShareGroupHeartbeat => pair!(share_group_heartbeat::ShareGroupHeartbeatRequest, share_group_heartbeat::ShareGroupHeartbeatResponse),
        ApiKey::ShareGroupDescribe => pair!(share_group_describe::ShareGroupDescribeRequest, share_group_describe::ShareGroupDescribeResponse),
        ApiKey::ShareFetch => pair!(share_fetch::ShareFetchRequest, share_fetch::ShareFetchResponse),
        ApiKey::ShareAcknowledge => pair!(share_acknowledge::ShareAcknowledgeRequest, share_acknowledge::ShareAcknowledgeResponse),
        ApiKey::InitializeShareGroupState => pair!(initialize_share_group_state::InitializeShareGroupStateRequest, initialize_share_group_state::InitializeShareGroupStateResponse),
        ApiKey::ReadShareGroupState => pair!(read_share_group_state::ReadShareGroupStateRequest, read_share_group_state::ReadShareGroupStateResponse),
        ApiKey::WriteShareGroupState => pair!(write_share_group_state::WriteShareGroupStateRequest, write_share_group_state::WriteShareGroupStateResponse),
        ApiKey::DeleteShareGroupState => pair!(delete_share_group_state::DeleteShareGroupStateRequest, delete_share_group_state::DeleteShareGroupStateResponse),
        ApiKey::ReadShareGroupStateSummary => pair!(read_share_group_state_summary::ReadShareGroupStateSummaryRequest, read_share_group_state_summary::ReadShareGroupStateSummaryResponse),
        ApiKey::DescribeShareGroupOffsets => pair!(describe_share_group_offsets::DescribeShareGroupOffsetsRequest, describe_share_group_offsets::DescribeShareGroupOffsetsResponse),
        ApiKey::AlterShareGroupOffsets => pair!(alter_share_group_offsets::AlterShareGroupOffsetsRequest, alter_share_group_offsets::AlterShareGroupOffsetsResponse),
        ApiKey::DeleteShareGroupOffsets => pair!(delete_share_group_offsets::DeleteShareGroupOffsetsRequest, delete_share_group_offsets::DeleteShareGroupOffsetsResponse),
        other => unreachable!("{other:?} is not a share-group API"),
    }
}

fuzz_target!(|data: &[u8]| {
    let [api_pick, version_pick, rest @ ..] = data else {
        return;
    };
    let key = SHARE_GROUP_APIS[*api_pick as usize % SHARE_GROUP_APIS.len()];
    let api = key.codec_support();
    let span = (api.max_version - api.min_version + 1) as u8;
    let version = api.min_version + (version_pick % span) as i16;

    // The frame as the broker will receive it: header v2 for every one.
    let mut frame = BytesMut::with_capacity(4 + rest.len());
    frame.put_i16(key as i16);
    frame.put_i16(version);
    frame.put_slice(rest);
    let mut r = Reader::new(frame.freeze());
    if let Ok(prefix) = RequestHeader::decode_prefix(&mut r) {
        assert_eq!((prefix.0, prefix.1), (key as i16, version));
        if let Ok(header) = RequestHeader::decode_rest(&mut r, prefix, 2) {
            assert_eq!(header.correlation_id, prefix.2);
            check_api(key, version, r, false);
        }
    }

    // The same bytes as a bare body, request and response.
    check_api(key, version, Reader::new(Bytes::copy_from_slice(rest)), true);
});
