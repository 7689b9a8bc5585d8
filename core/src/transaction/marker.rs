//! Transaction markers: the single record of a COMMIT or ABORT control
//! batch, in Kafka's format (`ControlRecordType` and
//! `EndTransactionMarker`).
//!
//! ```text
//! key:   version i16 = 0 | type i16 (0 ABORT, 1 COMMIT)
//! value: version i16 = 0 | coordinator_epoch i32
//! ```
//!
//! The batch around it has the control and transactional attribute bits
//! set, the producer's id and epoch, no sequence, and one record at offset
//! delta 0. Decoding never panics: bytes that are not a marker decode to
//! an error that says why.

/// The key and value versions Kafka writes: `ControlRecordType`'s
/// `CURRENT_CONTROL_RECORD_KEY_VERSION` and `EndTransactionMarker`'s
/// `CURRENT_END_TXN_MARKER_VERSION`.
pub const MARKER_VERSION: i16 = 0;
/// Bytes of a marker's record key.
pub const MARKER_KEY_BYTES: usize = 4;
/// Bytes of a marker's record value (version 0).
pub const MARKER_VALUE_BYTES: usize = 6;
/// `ControlRecordType.ABORT`'s id.
const ABORT_TYPE: i16 = 0;
/// `ControlRecordType.COMMIT`'s id.
const COMMIT_TYPE: i16 = 1;

/// Whether a transaction's marker commits or aborts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkerKind {
    Abort,
    Commit,
}

impl MarkerKind {
    pub fn is_abort(self) -> bool {
        self == MarkerKind::Abort
    }
    /// Kafka's name, as `kafka-dump-log.sh` prints it.
    pub fn name(self) -> &'static str {
        match self {
            MarkerKind::Abort => "ABORT",
            MarkerKind::Commit => "COMMIT",
        }
    }
}

/// A decoded COMMIT or ABORT marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    pub kind: MarkerKind,
    /// The epoch of the transaction coordinator that wrote it: the leader
    /// epoch of its `__transaction_state` partition. A partition refuses a
    /// marker from an older coordinator than the last one it saw.
    pub coordinator_epoch: i32,
}

/// Why a control record is not a transaction marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkerError {
    /// The key or value is shorter than the format needs, or missing.
    Truncated { field: &'static str, len: usize },
    /// A negative version: Kafka refuses these as invalid records.
    BadVersion { field: &'static str, version: i16 },
    /// A control record of another type (KRaft's LEADER_CHANGE, say).
    NotATransactionMarker { control_type: i16 },
}

impl std::fmt::Display for MarkerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MarkerError::Truncated { field, len } => {
                write!(f, "control record {field} has {len} bytes, too few")
            }
            MarkerError::BadVersion { field, version } => {
                write!(f, "control record {field} has invalid version {version}")
            }
            MarkerError::NotATransactionMarker { control_type } => {
                write!(
                    f,
                    "control record type {control_type} is not COMMIT or ABORT"
                )
            }
        }
    }
}

impl TxnMarker {
    /// The record key: version and type.
    pub fn encode_key(&self) -> [u8; MARKER_KEY_BYTES] {
        let kind = match self.kind {
            MarkerKind::Abort => ABORT_TYPE,
            MarkerKind::Commit => COMMIT_TYPE,
        };
        let mut key = [0u8; MARKER_KEY_BYTES];
        key[..2].copy_from_slice(&MARKER_VERSION.to_be_bytes());
        key[2..].copy_from_slice(&kind.to_be_bytes());
        key
    }

    /// The record value: version and coordinator epoch.
    pub fn encode_value(&self) -> [u8; MARKER_VALUE_BYTES] {
        let mut value = [0u8; MARKER_VALUE_BYTES];
        value[..2].copy_from_slice(&MARKER_VERSION.to_be_bytes());
        value[2..].copy_from_slice(&self.coordinator_epoch.to_be_bytes());
        value
    }

    /// Decodes a control record's key and value. As in Kafka, a newer
    /// (positive) version is read by its version-0 prefix.
    pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<TxnMarker, MarkerError> {
        let key = key.unwrap_or_default();
        if key.len() < MARKER_KEY_BYTES {
            return Err(MarkerError::Truncated {
                field: "key",
                len: key.len(),
            });
        }
        let key_version = i16::from_be_bytes([key[0], key[1]]);
        if key_version < 0 {
            return Err(MarkerError::BadVersion {
                field: "key",
                version: key_version,
            });
        }
        let kind = match i16::from_be_bytes([key[2], key[3]]) {
            ABORT_TYPE => MarkerKind::Abort,
            COMMIT_TYPE => MarkerKind::Commit,
            other => {
                return Err(MarkerError::NotATransactionMarker {
                    control_type: other,
                })
            }
        };
        let value = value.unwrap_or_default();
        if value.len() < MARKER_VALUE_BYTES {
            return Err(MarkerError::Truncated {
                field: "value",
                len: value.len(),
            });
        }
        let value_version = i16::from_be_bytes([value[0], value[1]]);
        if value_version < 0 {
            return Err(MarkerError::BadVersion {
                field: "value",
                version: value_version,
            });
        }
        let coordinator_epoch = i32::from_be_bytes([value[2], value[3], value[4], value[5]]);
        Ok(TxnMarker {
            kind,
            coordinator_epoch,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_in_kafkas_bytes() {
        let commit = TxnMarker {
            kind: MarkerKind::Commit,
            coordinator_epoch: 7,
        };
        // Kafka's EndTransactionMarker for COMMIT, coordinator epoch 7.
        assert_eq!(commit.encode_key(), [0, 0, 0, 1]);
        assert_eq!(commit.encode_value(), [0, 0, 0, 0, 0, 7]);
        let abort = TxnMarker {
            kind: MarkerKind::Abort,
            coordinator_epoch: -1,
        };
        assert_eq!(abort.encode_key(), [0, 0, 0, 0]);
        for m in [commit, abort] {
            assert_eq!(
                TxnMarker::decode(Some(&m.encode_key()), Some(&m.encode_value())),
                Ok(m)
            );
        }
    }

    #[test]
    fn a_newer_version_is_read_by_its_prefix() {
        let m = TxnMarker::decode(Some(&[0, 1, 0, 1, 9]), Some(&[0, 1, 0, 0, 0, 3, 42])).unwrap();
        assert_eq!(m.kind, MarkerKind::Commit);
        assert_eq!(m.coordinator_epoch, 3);
    }

    #[test]
    fn bad_markers_are_refused_with_a_reason() {
        assert!(matches!(
            TxnMarker::decode(None, Some(&[0; 6])),
            Err(MarkerError::Truncated { field: "key", .. })
        ));
        assert!(matches!(
            TxnMarker::decode(Some(&[0, 0, 0, 1]), Some(&[0, 0, 0])),
            Err(MarkerError::Truncated { field: "value", .. })
        ));
        assert!(matches!(
            TxnMarker::decode(Some(&[0xff, 0xff, 0, 1]), Some(&[0; 6])),
            Err(MarkerError::BadVersion { field: "key", .. })
        ));
        assert!(matches!(
            TxnMarker::decode(Some(&[0, 0, 0, 1]), Some(&[0x80, 0, 0, 0, 0, 0])),
            Err(MarkerError::BadVersion { field: "value", .. })
        ));
        assert_eq!(
            TxnMarker::decode(Some(&[0, 0, 0, 2]), Some(&[0; 6])),
            Err(MarkerError::NotATransactionMarker { control_type: 2 })
        );
    }
}
