//! Criterion micro-benchmarks of the CPU paths: index lookups on full
//! default-sized indexes, RecordBatch validation, and the wire codec of
//! Produce (decode) and Fetch (encode), the two requests on the data path.
//!
//! After criterion's own report, the harness prints ratios between
//! benchmarks of this same run (it reads criterion's `estimates.json` files
//! and skips any that this process did not write, e.g. when a filter left
//! them out).
//!
//! ```sh
//! cargo bench --bench micro                 # everything
//! cargo bench --bench micro -- batch/       # one group
//! ```

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use criterion::{BenchmarkGroup, Criterion, Throughput};
use pinlog::constants::DEFAULT_SEGMENT_INDEX_BYTES;
use pinlog::log::batch::{self, build_batch, BatchSpec, CountRule, RecordSpec};
use pinlog::log::offset_index::OffsetIndex;
use pinlog::log::time_index::TimeIndex;
use pinlog::protocol::chunks::{ChunkWriter, RecordData};
use pinlog::protocol::codec::Reader;
use pinlog::protocol::messages::fetch::{FetchResponse, FetchableTopicResponse, PartitionData};
use pinlog::protocol::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};

/// Records per batch and value size: a producer batch of about 64 KiB, the
/// same shape as the storage bench's.
const BATCH_RECORDS: usize = 64;
const RECORD_VALUE_BYTES: usize = 1000;
/// Random lookup targets cycled through by the index benches; a power of two.
const TARGETS: usize = 1 << 16;
/// Offsets between two offset-index entries, and byte distance between the
/// batches they point at (kept below `i32::MAX` over a full index).
const OFFSETS_PER_ENTRY: i64 = 16;
const BYTES_PER_ENTRY: u32 = 1024;
const TIMESTAMP_STEP_MS: i64 = 10;
/// Partitions in the benchmarked Produce and Fetch messages, each carrying
/// one 64 KiB batch: the shape of the P1 workload's requests.
const CODEC_PARTITIONS: i32 = 12;
/// Versions the benchmarks use: the highest pinlog serves.
const PRODUCE_VERSION: i16 = 9;
const FETCH_VERSION: i16 = 12;

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn random_targets(lo: i64, hi: i64, seed: u64) -> Vec<i64> {
    let mut state = seed;
    let span = (hi - lo + 1) as u64;
    (0..TARGETS)
        .map(|_| lo + (xorshift(&mut state) % span) as i64)
        .collect()
}

fn producer_batch() -> Vec<u8> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let values: Vec<Vec<u8>> = (0..BATCH_RECORDS)
        .map(|_| {
            (0..RECORD_VALUE_BYTES)
                .map(|_| xorshift(&mut seed) as u8)
                .collect()
        })
        .collect();
    let records: Vec<RecordSpec> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (i as i64, None, &v[..]))
        .collect();
    build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: 1_700_000_000_000,
        records: &records,
    })
}

fn scratch_dir() -> tempfile::TempDir {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&root).expect("create target/tmp");
    tempfile::tempdir_in(root).expect("temp dir under target/tmp")
}

fn configure<M: criterion::measurement::Measurement>(group: &mut BenchmarkGroup<'_, M>) {
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
}

/// Lookups in a full default-sized (10 MiB, 1,310,720-entry) offset index:
/// uniformly random targets, and targets in the warm tail that a consumer
/// reading near the log end asks for.
fn offset_index(c: &mut Criterion) {
    let dir = scratch_dir();
    let mut index = OffsetIndex::create(dir.path().join("0.index"), 0, DEFAULT_SEGMENT_INDEX_BYTES)
        .expect("create offset index");
    for n in 0..index.max_entries() {
        index
            .append(n as i64 * OFFSETS_PER_ENTRY, n as u32 * BYTES_PER_ENTRY)
            .expect("fill offset index");
    }
    assert!(index.is_full());
    let last = index.last_offset();
    let random = random_targets(0, last + OFFSETS_PER_ENTRY - 1, 1);
    // The last 512 entries lie in the 8 KiB warm section.
    let tail = random_targets(last - 512 * OFFSETS_PER_ENTRY, last, 2);
    let mut group = c.benchmark_group("offset_index");
    configure(&mut group);
    eprintln!("offset_index: {} entries", index.entries());
    for (name, targets) in [("lookup_random", &random), ("lookup_tail", &tail)] {
        group.bench_function(name, |b| {
            let mut i = 0usize;
            b.iter(|| {
                let target = targets[i & (TARGETS - 1)];
                i += 1;
                black_box(index.lookup(black_box(target)))
            })
        });
    }
    group.finish();
}

/// Lookups of random timestamps in a full default-sized (873,813-entry)
/// time index.
fn time_index(c: &mut Criterion) {
    let dir = scratch_dir();
    let mut index = TimeIndex::create(
        dir.path().join("0.timeindex"),
        0,
        DEFAULT_SEGMENT_INDEX_BYTES,
    )
    .expect("create time index");
    let first_ts = 1_700_000_000_000i64;
    let mut n = 0i64;
    while !index.is_full() {
        index
            .maybe_append(
                first_ts + n * TIMESTAMP_STEP_MS,
                n * OFFSETS_PER_ENTRY,
                false,
            )
            .expect("fill time index");
        n += 1;
    }
    let (last_ts, _) = index.last_entry();
    let random = random_targets(first_ts, last_ts + TIMESTAMP_STEP_MS - 1, 3);
    let mut group = c.benchmark_group("time_index");
    configure(&mut group);
    eprintln!("time_index: {} entries", index.entries());
    group.bench_function("lookup_random", |b| {
        let mut i = 0usize;
        b.iter(|| {
            let target = random[i & (TARGETS - 1)];
            i += 1;
            black_box(index.lookup(black_box(target)))
        })
    });
    group.finish();
}

/// Full validation of a 64 KiB batch (CRC-32C over its CRC-covered bytes plus
/// header checks), the bare CRC-32C of the same bytes for comparison, and
/// header parsing alone.
fn batch_checks(c: &mut Criterion) {
    let batch = producer_batch();
    assert!(batch::validate(&batch, CountRule::Exact).is_ok());
    // The CRC covers everything from the attributes field (byte 21) on.
    let crc_covered = &batch[21..];
    assert_eq!(
        crc32c::crc32c(crc_covered),
        batch::parse_header(&batch).expect("header").crc
    );
    let mut group = c.benchmark_group("batch");
    configure(&mut group);
    group.throughput(Throughput::Bytes(batch.len() as u64));
    group.bench_function("validate_64k", |b| {
        b.iter(|| batch::validate(black_box(&batch), CountRule::Exact))
    });
    group.bench_function("crc32c_64k", |b| {
        b.iter(|| crc32c::crc32c(black_box(crc_covered)))
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("parse_header", |b| {
        b.iter(|| batch::parse_header(black_box(&batch)))
    });
    group.finish();
}

/// Produce decode and Fetch encode of 12 partitions x 64 KiB, against a
/// plain copy of the same bytes: the codec must cost far less than one copy
/// of the records, because it slices them (decode) and references them
/// (encode) instead of copying.
fn codec(c: &mut Criterion) {
    let batch = Bytes::from(producer_batch());
    let produce = ProduceRequest {
        transactional_id: None,
        acks: 1,
        timeout_ms: 30_000,
        topics: vec![TopicProduceData {
            name: "bench".into(),
            partitions: (0..CODEC_PARTITIONS)
                .map(|index| PartitionProduceData {
                    index,
                    records: Some(batch.clone()),
                })
                .collect(),
        }],
    };
    let mut encoded = BytesMut::new();
    produce.encode(&mut encoded, PRODUCE_VERSION);
    let encoded = encoded.freeze();
    let fetch = FetchResponse {
        responses: vec![FetchableTopicResponse {
            topic: "bench".into(),
            partitions: (0..CODEC_PARTITIONS)
                .map(|partition_index| PartitionData {
                    partition_index,
                    high_watermark: 1 << 20,
                    records: Some(RecordData::Bytes(batch.clone())),
                    ..PartitionData::default()
                })
                .collect(),
        }],
        ..FetchResponse::default()
    };
    let mut group = c.benchmark_group("codec");
    configure(&mut group);
    group.throughput(Throughput::Bytes(encoded.len() as u64));
    group.bench_function("produce_decode_12x64k", |b| {
        b.iter(|| {
            ProduceRequest::decode(
                &mut Reader::new(black_box(encoded.clone())),
                PRODUCE_VERSION,
            )
        })
    });
    group.bench_function("fetch_encode_12x64k", |b| {
        b.iter(|| {
            let mut w = ChunkWriter::new();
            black_box(&fetch).encode_chunked(&mut w, FETCH_VERSION);
            w.finish()
        })
    });
    group.bench_function("memcpy_12x64k", |b| {
        b.iter(|| black_box(&encoded[..]).to_vec())
    });
    group.finish();
}

/// Mean time in ns of `group/function` from criterion's estimates, if this
/// process (started at `since`) wrote them.
fn mean_ns(root: &Path, group: &str, function: &str, since: SystemTime) -> Option<f64> {
    let path = root.join(group).join(function).join("new/estimates.json");
    let fresh = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since);
    if !fresh {
        return None;
    }
    let json = std::fs::read_to_string(&path).ok()?;
    let mean = &json[json.find("\"mean\"")?..];
    let value = &mean[mean.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    let end = value.find([',', '}'])?;
    value[..end].trim().parse().ok()
}

/// Where criterion writes its estimates: `$CRITERION_HOME`, else
/// `target/criterion`.
fn criterion_home() -> PathBuf {
    std::env::var_os("CRITERION_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .expect("target dir")
                .join("criterion")
        })
}

fn print_ratios(root: &Path, since: SystemTime) {
    let batch_len = producer_batch().len() as f64;
    println!("\nRatios from this run (criterion mean estimates):");
    let copy = mean_ns(root, "codec", "memcpy_12x64k", since);
    for (name, what) in [
        ("produce_decode_12x64k", "Produce decode"),
        ("fetch_encode_12x64k", "Fetch encode"),
    ] {
        if let (Some(t), Some(c)) = (mean_ns(root, "codec", name, since), copy) {
            println!(
                "  {what} / one copy of the same 12 x 64 KiB: {:.4} ({t:.0} vs {c:.0} ns)",
                t / c
            );
        }
    }
    let validate = mean_ns(root, "batch", "validate_64k", since);
    let crc = mean_ns(root, "batch", "crc32c_64k", since);
    if let (Some(v), Some(c)) = (validate, crc) {
        println!(
            "  batch::validate / crc32c over the same 64 KiB: {:.3} ({:.2} vs {:.2} GB/s)",
            v / c,
            batch_len / v,
            batch_len / c
        );
    }
    let random = mean_ns(root, "offset_index", "lookup_random", since);
    let tail = mean_ns(root, "offset_index", "lookup_tail", since);
    if let (Some(r), Some(t)) = (random, tail) {
        println!(
            "  offset index lookup, random / warm tail: {:.2} ({r:.1} vs {t:.1} ns)",
            r / t
        );
    }
    let time = mean_ns(root, "time_index", "lookup_random", since);
    if let (Some(t), Some(r)) = (time, random) {
        println!(
            "  time index / offset index, random lookups: {:.2} ({t:.1} vs {r:.1} ns)",
            t / r
        );
    }
}

fn main() {
    let since = SystemTime::now();
    let root = criterion_home();
    let mut c = Criterion::default()
        .output_directory(&root)
        .configure_from_args();
    offset_index(&mut c);
    time_index(&mut c);
    batch_checks(&mut c);
    codec(&mut c);
    c.final_summary();
    print_ratios(&root, since);
}
