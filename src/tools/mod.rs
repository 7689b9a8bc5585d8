//! Offline operator tools for a partition's files: a dump that reads like
//! Kafka's `kafka-dump-log.sh` and a verifier that checks a whole partition
//! directory.
//!
//! Both run while the broker is stopped (or on a copy of a data directory),
//! never on a shard. They therefore read with plain blocking `std::fs`
//! instead of glommio's DMA files: nothing waits on them, and buffered reads
//! work on any file system and on files of any length, including the torn or
//! unaligned ones these tools exist to diagnose.
//!
//! Design rules, because their input is by definition suspect:
//!
//! - **No byte sequence makes them panic.** Every length and offset read from
//!   a file is checked before it is used as an index.
//! - **Memory is bounded by the file, not by what the file claims.** A batch
//!   length is trusted only up to the bytes left in the file, and `.log` files
//!   are read one batch at a time, so dumping a 1 GiB segment holds one batch
//!   in memory, not the segment.
//! - **Output is bounded too.** The verifier reports at most
//!   [`verify::PROBLEMS_PER_FILE_MAX`] problems per file and then says how
//!   many more it found, so a segment of garbage gives a readable report.
//!
//! The dump prints what is in a file and stops at the first byte it cannot
//! read ([`dump::dump_file`]). The verifier cross-checks the files of a
//! partition against each other and suggests, for each problem, what an
//! operator should do about it ([`verify::verify_partition_dir`]).

pub mod dump;
pub mod verify;
