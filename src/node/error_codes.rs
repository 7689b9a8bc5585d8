//! Kafka's error code for each storage-layer error: what handlers and the
//! coordinators answer when the log refuses or fails a write.

use crate::error::{BatchError, LogError};
use crate::protocol::error_code;

/// Kafka's error code for a storage-layer error.
pub fn error_code_for(e: &LogError) -> i16 {
    match e {
        LogError::InvalidBatch { source, .. } => match source {
            BatchError::TooLarge { .. } => error_code::MESSAGE_TOO_LARGE,
            BatchError::UnsupportedMagic { .. } => error_code::UNSUPPORTED_FOR_MESSAGE_FORMAT,
            BatchError::CrcMismatch { .. } => error_code::CORRUPT_MESSAGE,
            _ => error_code::INVALID_RECORD,
        },
        LogError::OffsetOutOfRange { .. } => error_code::OFFSET_OUT_OF_RANGE,
        LogError::NonMonotonicAppend { .. } => error_code::INVALID_RECORD,
        LogError::OutOfOrderSequence { .. } => error_code::OUT_OF_ORDER_SEQUENCE_NUMBER,
        LogError::InvalidProducerEpoch { .. } => error_code::INVALID_PRODUCER_EPOCH,
        LogError::InvalidTxnState { .. } | LogError::UnverifiedTxnBatch { .. } => {
            error_code::INVALID_TXN_STATE
        }
        LogError::TransactionCoordinatorFenced { .. } => error_code::TRANSACTION_COORDINATOR_FENCED,
        LogError::MixedDuplicateAppend { .. } => error_code::INVALID_RECORD,
        LogError::Io { .. } | LogError::Offline { .. } => error_code::KAFKA_STORAGE_ERROR,
        _ => error_code::UNKNOWN_SERVER_ERROR,
    }
}
