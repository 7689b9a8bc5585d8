//! The persister's wire side without a network: each call's request read
//! back by the codec the coordinator's handlers decode with, and each kind
//! of answer read back into the coordinator's terms.

use bytes::BytesMut;

use super::*;
use crate::group::share::partition::StateWrite;
use crate::protocol::messages::read_share_group_state::ReadPartitionResult;
use crate::protocol::messages::read_share_group_state_summary::SummaryPartitionResult;
use crate::protocol::messages::share_group_state::StateBatch;

fn key() -> SharePartitionKey {
    SharePartitionKey {
        group_id: "g".into(),
        topic_id: [3; 16],
        partition: 7,
    }
}

fn reader(w: BytesMut) -> Reader {
    Reader::new(w.freeze())
}

fn batches() -> Vec<StateBatch> {
    vec![StateBatch {
        first_offset: 5,
        last_offset: 9,
        delivery_state: 2,
        delivery_count: 1,
    }]
}

#[test]
fn every_request_reads_back_as_the_coordinator_decodes_it() {
    let write = StateWrite {
        start_offset: 5,
        delivery_complete_count: 3,
        state_batches: batches(),
    };
    let (api, v, body) = encode_request(
        &key(),
        &StateOp::Write {
            state_epoch: 2,
            leader_epoch: 4,
            write: write.clone(),
        },
    );
    assert_eq!((api, v), (ApiKey::WriteShareGroupState, WRITE_VERSION));
    assert!(api.supports(v));
    let req = WriteShareGroupStateRequest::decode(&mut reader(body), v).unwrap();
    assert_eq!(req.group_id, "g");
    assert_eq!(req.topics[0].topic_id, [3; 16]);
    let p = &req.topics[0].partitions[0];
    assert_eq!(
        (p.partition, p.state_epoch, p.leader_epoch, p.start_offset),
        (7, 2, 4, 5)
    );
    assert_eq!(p.delivery_complete_count, 3);
    assert_eq!(p.state_batches, batches());

    let (api, v, body) = encode_request(
        &key(),
        &StateOp::Initialize {
            state_epoch: 1,
            start_offset: 42,
        },
    );
    assert!(api.supports(v));
    let req = InitializeShareGroupStateRequest::decode(&mut reader(body), v).unwrap();
    let p = &req.topics[0].partitions[0];
    assert_eq!((p.partition, p.state_epoch, p.start_offset), (7, 1, 42));

    let (api, v, body) = encode_request(&key(), &StateOp::Read { leader_epoch: 9 });
    assert!(api.supports(v));
    let req = ReadShareGroupStateRequest::decode(&mut reader(body), v).unwrap();
    let p = &req.topics[0].partitions[0];
    assert_eq!((p.partition, p.leader_epoch), (7, 9));

    let (api, v, body) = encode_request(&key(), &StateOp::Delete);
    assert!(api.supports(v));
    let req = DeleteShareGroupStateRequest::decode(&mut reader(body), v).unwrap();
    assert_eq!(req.topics[0].partitions[0].partition, 7);

    let (api, v, body) = encode_request(&key(), &StateOp::Summary { leader_epoch: 9 });
    assert!(api.supports(v));
    let req = ReadShareGroupStateSummaryRequest::decode(&mut reader(body), v).unwrap();
    assert_eq!(req.topics[0].partitions[0].leader_epoch, 9);
}

fn read_answer(result: ReadPartitionResult) -> Result<StateAnswer, i16> {
    let resp = ReadShareGroupStateResponse {
        results: vec![StateTopic {
            topic_id: [3; 16],
            partitions: vec![result],
        }],
    };
    let mut w = BytesMut::new();
    resp.encode(&mut w, READ_VERSION);
    decode_answer(&StateOp::Read { leader_epoch: 1 }, &mut reader(w)).unwrap()
}

#[test]
fn answers_read_back_with_their_errors_and_kafkas_uninitialized_state() {
    let state = read_answer(ReadPartitionResult {
        partition: 7,
        state_epoch: 2,
        start_offset: 5,
        state_batches: batches(),
        ..Default::default()
    });
    let Ok(StateAnswer::Read(r)) = state else {
        panic!("{state:?}")
    };
    assert!(r.initialized);
    assert_eq!((r.state_epoch, r.start_offset), (2, 5));
    assert_eq!(r.state_batches, batches());

    let never = read_answer(ReadPartitionResult {
        partition: 7,
        state_epoch: DEFAULT_STATE_EPOCH,
        start_offset: UNINITIALIZED_START_OFFSET,
        ..Default::default()
    });
    assert!(matches!(never, Ok(StateAnswer::Read(ref r)) if !r.initialized));

    let fenced = read_answer(ReadPartitionResult {
        partition: 7,
        error_code: error_code::FENCED_LEADER_EPOCH,
        ..Default::default()
    });
    assert_eq!(fenced, Err(error_code::FENCED_LEADER_EPOCH));

    // A write's code, and a response that leaves the partition out.
    let mut w = BytesMut::new();
    WriteShareGroupStateResponse {
        results: vec![StateTopic {
            topic_id: [3; 16],
            partitions: vec![PartitionResult {
                partition: 7,
                error_code: error_code::FENCED_STATE_EPOCH,
                error_message: None,
            }],
        }],
    }
    .encode(&mut w, WRITE_VERSION);
    let op = StateOp::Write {
        state_epoch: 0,
        leader_epoch: 0,
        write: StateWrite {
            start_offset: 0,
            delivery_complete_count: 0,
            state_batches: Vec::new(),
        },
    };
    assert_eq!(
        decode_answer(&op, &mut reader(w)).unwrap(),
        Err(error_code::FENCED_STATE_EPOCH)
    );
    let mut w = BytesMut::new();
    DeleteShareGroupStateResponse { results: vec![] }.encode(&mut w, DELETE_VERSION);
    assert_eq!(
        decode_answer(&StateOp::Delete, &mut reader(w)).unwrap(),
        Err(error_code::UNKNOWN_SERVER_ERROR)
    );

    let mut w = BytesMut::new();
    ReadShareGroupStateSummaryResponse {
        results: vec![StateTopic {
            topic_id: [3; 16],
            partitions: vec![SummaryPartitionResult {
                partition: 7,
                state_epoch: 2,
                leader_epoch: 4,
                start_offset: 5,
                delivery_complete_count: 3,
                ..Default::default()
            }],
        }],
    }
    .encode(&mut w, SUMMARY_VERSION);
    let summary = decode_answer(&StateOp::Summary { leader_epoch: 4 }, &mut reader(w)).unwrap();
    assert_eq!(
        summary,
        Ok(StateAnswer::Summary(SummaryAnswer {
            state_epoch: 2,
            leader_epoch: 4,
            start_offset: 5,
            delivery_complete_count: 3,
        }))
    );
}

#[test]
fn a_truncated_answer_is_a_decode_error_not_a_panic() {
    let mut w = BytesMut::new();
    ReadShareGroupStateResponse {
        results: vec![StateTopic {
            topic_id: [3; 16],
            partitions: vec![ReadPartitionResult {
                state_batches: batches(),
                ..Default::default()
            }],
        }],
    }
    .encode(&mut w, READ_VERSION);
    for cut in 0..w.len() {
        let mut r = Reader::new(w.clone().freeze().slice(..cut));
        assert!(decode_answer(&StateOp::Read { leader_epoch: 0 }, &mut r).is_err());
    }
}
