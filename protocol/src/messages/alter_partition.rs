//! AlterPartition (API 56): a partition leader asks the active controller to
//! change the partition's ISR, as Kafka's brokers do. pinlog speaks v2 and
//! v3 (topic ids; v3 adds each new member's broker epoch, KIP-903). Every
//! version is flexible.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterPartitionRequest {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub topics: Vec<AlterPartitionTopic>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterPartitionTopic {
    pub topic_id: [u8; 16],
    pub partitions: Vec<AlterPartitionData>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterPartitionData {
    pub partition_index: i32,
    pub leader_epoch: i32,
    /// The proposed ISR, with each member's broker epoch (-1 below v3).
    pub new_isr: Vec<IsrMember>,
    /// 0 recovered, 1 recovering (after an unclean election).
    pub leader_recovery_state: i8,
    pub partition_epoch: i32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IsrMember {
    pub broker_id: i32,
    pub broker_epoch: i64,
}

impl AlterPartitionRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let broker_id = r.i32("broker_id")?;
        let broker_epoch = r.i64("broker_epoch")?;
        let topics = r.array("topics", true, 17, |r| {
            let topic_id = r.uuid("topic_id")?;
            let partitions = r.array("partitions", true, 14, |r| {
                let partition_index = r.i32("partition_index")?;
                let leader_epoch = r.i32("leader_epoch")?;
                let new_isr = if version >= 3 {
                    r.array("new_isr_with_epochs", true, 13, |r| {
                        let m = IsrMember {
                            broker_id: r.i32("broker_id")?,
                            broker_epoch: r.i64("broker_epoch")?,
                        };
                        r.skip_tagged_fields()?;
                        Ok(m)
                    })?
                } else {
                    r.array("new_isr", true, 4, |r| {
                        Ok(IsrMember {
                            broker_id: r.i32("broker_id")?,
                            broker_epoch: -1,
                        })
                    })?
                };
                let leader_recovery_state = r.i8("leader_recovery_state")?;
                let partition_epoch = r.i32("partition_epoch")?;
                r.skip_tagged_fields()?;
                Ok(AlterPartitionData {
                    partition_index,
                    leader_epoch,
                    new_isr,
                    leader_recovery_state,
                    partition_epoch,
                })
            })?;
            r.skip_tagged_fields()?;
            Ok(AlterPartitionTopic {
                topic_id,
                partitions,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(AlterPartitionRequest {
            broker_id,
            broker_epoch,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.broker_id);
        w.put_i64(self.broker_epoch);
        w.put_array_len(Some(self.topics.len()), true);
        for t in &self.topics {
            w.put_slice(&t.topic_id);
            w.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i32(p.leader_epoch);
                w.put_array_len(Some(p.new_isr.len()), true);
                for m in &p.new_isr {
                    w.put_i32(m.broker_id);
                    if version >= 3 {
                        w.put_i64(m.broker_epoch);
                        w.put_empty_tagged_fields();
                    }
                }
                w.put_i8(p.leader_recovery_state);
                w.put_i32(p.partition_epoch);
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterPartitionResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub topics: Vec<AlterPartitionTopicResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterPartitionTopicResult {
    pub topic_id: [u8; 16],
    pub partitions: Vec<AlterPartitionResult>,
}

/// The partition's state after the request, or why it was refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterPartitionResult {
    pub partition_index: i32,
    pub error_code: i16,
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub isr: Vec<i32>,
    pub leader_recovery_state: i8,
    pub partition_epoch: i32,
}

impl AlterPartitionResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let topics = r.array("topics", true, 17, |r| {
            let topic_id = r.uuid("topic_id")?;
            let partitions = r.array("partitions", true, 24, |r| {
                let p = AlterPartitionResult {
                    partition_index: r.i32("partition_index")?,
                    error_code: r.i16("error_code")?,
                    leader_id: r.i32("leader_id")?,
                    leader_epoch: r.i32("leader_epoch")?,
                    isr: r.array("isr", true, 4, |r| r.i32("isr"))?,
                    leader_recovery_state: r.i8("leader_recovery_state")?,
                    partition_epoch: r.i32("partition_epoch")?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(AlterPartitionTopicResult {
                topic_id,
                partitions,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(AlterPartitionResponse {
            throttle_time_ms,
            error_code,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_array_len(Some(self.topics.len()), true);
        for t in &self.topics {
            w.put_slice(&t.topic_id);
            w.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i16(p.error_code);
                w.put_i32(p.leader_id);
                w.put_i32(p.leader_epoch);
                w.put_array_len(Some(p.isr.len()), true);
                for r in &p.isr {
                    w.put_i32(*r);
                }
                w.put_i8(p.leader_recovery_state);
                w.put_i32(p.partition_epoch);
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::conformance_tests;

    const VERSIONS: std::ops::RangeInclusive<i16> = 2..=3;

    fn request(version: i16) -> AlterPartitionRequest {
        AlterPartitionRequest {
            broker_id: 2,
            broker_epoch: 40,
            topics: vec![AlterPartitionTopic {
                topic_id: [3; 16],
                partitions: vec![AlterPartitionData {
                    partition_index: 1,
                    leader_epoch: 5,
                    new_isr: vec![
                        IsrMember {
                            broker_id: 2,
                            broker_epoch: if version >= 3 { 40 } else { -1 },
                        },
                        IsrMember {
                            broker_id: 3,
                            broker_epoch: if version >= 3 { 44 } else { -1 },
                        },
                    ],
                    leader_recovery_state: 1,
                    partition_epoch: 9,
                }],
            }],
        }
    }

    fn response(_version: i16) -> AlterPartitionResponse {
        AlterPartitionResponse {
            throttle_time_ms: 1,
            error_code: 0,
            topics: vec![AlterPartitionTopicResult {
                topic_id: [3; 16],
                partitions: vec![AlterPartitionResult {
                    partition_index: 1,
                    error_code: 95,
                    leader_id: 2,
                    leader_epoch: 5,
                    isr: vec![2, 3],
                    leader_recovery_state: 1,
                    partition_epoch: 10,
                }],
            }],
        }
    }

    conformance_tests!(
        AlterPartitionRequest,
        AlterPartitionResponse,
        VERSIONS,
        request,
        response
    );
}
