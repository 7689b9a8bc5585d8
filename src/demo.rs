//! `pinlog demo`: drives the storage engine and the shards end to end
//! until the Kafka protocol lands, so a newcomer can watch it work.
//!
//! It appends through the shards (half the appends hop to another core),
//! restarts cleanly, then appends more, simulates a crash with a torn write
//! at one partition's tail, and restarts again through recovery.

use std::path::PathBuf;
use std::time::Instant;

use crate::error::LogResult;
use crate::log::batch::{build_batch, BatchSpec, RecordSpec};
use crate::log::segment::segment_file_path;
use crate::shard::runtime::{run_shards, ShardConfig, Shutdown};
use crate::shard::shard::{now_ms, PartitionSummary};
use crate::topic_partition::TopicPartition;

pub const DEMO_TOPIC: &str = "demo";

#[derive(Debug, Clone)]
pub struct DemoOptions {
    pub data_dir: PathBuf,
    pub shards: Option<usize>,
    pub partitions: i32,
    pub records: u64,
    pub record_size: usize,
    pub batch_records: usize,
}

fn batch_bytes(records: usize, record_size: usize) -> bytes::BytesMut {
    let value = vec![b'x'; record_size];
    let recs: Vec<RecordSpec> = (0..records).map(|i| (i as i64, None, &value[..])).collect();
    bytes::BytesMut::from(
        &build_batch(&BatchSpec {
            base_offset: 0,
            leader_epoch: 0,
            base_timestamp: now_ms(),
            records: &recs,
        })[..],
    )
}

/// Appends `records` records per shard body, spread over every partition.
fn append_phase(
    config: &ShardConfig,
    opts: &DemoOptions,
    shutdown: Shutdown,
) -> LogResult<(f64, u64)> {
    let per_shard = opts.records / config.shard_count as u64;
    let partitions = opts.partitions;
    let batch_records = opts.batch_records;
    let record_size = opts.record_size;
    let started = Instant::now();
    let outcome = run_shards(config.clone(), shutdown, move |shard| async move {
        for p in 0..partitions {
            let tp = TopicPartition::new(DEMO_TOPIC, p);
            if shard.owner(&tp) == shard.id() {
                shard.open_partition(tp, None).await?;
            }
        }
        // Let every shard open its partitions before anyone appends.
        glommio::timer::sleep(std::time::Duration::from_millis(50)).await;
        let template = batch_bytes(batch_records, record_size);
        let mut sent = 0u64;
        let mut bytes = 0u64;
        let mut hops = 0u64;
        let mut i = shard.id() as i32;
        while sent < per_shard {
            let tp = TopicPartition::new(DEMO_TOPIC, i % partitions);
            if shard.owner(&tp) != shard.id() {
                hops += 1;
            }
            bytes += template.len() as u64;
            shard.append(tp, template.clone(), 0).await?;
            sent += batch_records as u64;
            i += 1;
        }
        if shutdown == Shutdown::Clean {
            shard.flush_all().await?;
        }
        Ok::<_, crate::error::LogError>((sent, bytes, hops))
    })?;
    let secs = started.elapsed().as_secs_f64();
    let mut records = 0;
    let mut bytes = 0;
    let mut hops = 0;
    for r in outcome.results {
        let (s, b, h) = r?;
        records += s;
        bytes += b;
        hops += h;
    }
    let appends = records / opts.batch_records as u64;
    println!(
        "  appended {records} records ({:.1} MiB) in {secs:.2} s: {:.0} records/s, {:.1} MiB/s; {:.0}% of appends hopped to another shard",
        bytes as f64 / (1 << 20) as f64,
        records as f64 / secs,
        bytes as f64 / (1 << 20) as f64 / secs,
        100.0 * hops as f64 / appends.max(1) as f64,
    );
    Ok((secs, records))
}

/// Opens the data directory, reports every partition, and stops cleanly.
fn restart_phase(config: &ShardConfig) -> LogResult<Vec<PartitionSummary>> {
    let started = Instant::now();
    let outcome = run_shards(config.clone(), Shutdown::Clean, |shard| async move {
        shard.local_summaries().await
    })?;
    let secs = started.elapsed().as_secs_f64();
    let mut all: Vec<PartitionSummary> = outcome.results.into_iter().flatten().collect();
    all.sort_by(|a, b| a.tp.cmp(&b.tp));
    let recovered: usize = all.iter().map(|s| s.recovery.segments_recovered).sum();
    let scanned: u64 = all.iter().map(|s| s.recovery.bytes_scanned).sum();
    let truncated: u64 = all.iter().map(|s| s.recovery.bytes_truncated).sum();
    println!(
        "  {} shutdown found; opened {} partitions in {:.0} ms; recovered {recovered} segments ({:.1} MiB scanned, {truncated} bytes of torn tail dropped)",
        if outcome.startup.clean_shutdown { "clean" } else { "NO clean" },
        all.len(),
        secs * 1000.0,
        scanned as f64 / (1 << 20) as f64,
    );
    for s in &all {
        println!(
            "    {:<10} shard {}  offsets [{}, {})  {} segment(s)  {:.1} MiB",
            s.tp.to_string(),
            s.shard,
            s.log_start_offset,
            s.log_end_offset,
            s.segments,
            s.size_bytes as f64 / (1 << 20) as f64
        );
    }
    Ok(all)
}

/// Runs the whole demo and returns an error if any check fails.
pub fn run_demo(opts: DemoOptions) -> Result<(), String> {
    let mut config = ShardConfig::new(&opts.data_dir);
    if let Some(n) = opts.shards {
        config.shard_count = n;
    }
    config.log_defaults.segment_bytes = 64 << 20;
    println!(
        "pinlog demo: {} shard(s) on CPUs {:?}, data in {}",
        config.shard_count,
        (0..config.shard_count)
            .map(|i| config.cpus[i % config.cpus.len()])
            .collect::<Vec<_>>(),
        opts.data_dir.display()
    );
    let e = |e: crate::error::LogError| e.to_string();

    println!("1/4 appending through the shards, then a clean shutdown");
    append_phase(&config, &opts, Shutdown::Clean).map_err(e)?;
    println!("2/4 clean restart (no scan needed)");
    let before = restart_phase(&config).map_err(e)?;

    println!("3/4 appending more, then a simulated crash with a torn write on {DEMO_TOPIC}-0");
    let (_, appended) = append_phase(&config, &opts, Shutdown::SimulateCrash).map_err(e)?;
    tear_tail(&opts.data_dir, &TopicPartition::new(DEMO_TOPIC, 0)).map_err(|e| e.to_string())?;

    println!("4/4 restart after the crash: recovery scans, validates and truncates");
    let after = restart_phase(&config).map_err(e)?;
    let total_before: i64 = before.iter().map(|s| s.log_end_offset).sum();
    let total_after: i64 = after.iter().map(|s| s.log_end_offset).sum();
    let lost = total_before + appended as i64 - total_after;
    if total_after < total_before {
        return Err(format!(
            "recovery lost flushed data: {total_before} records before the crash run, {total_after} after"
        ));
    }
    println!(
        "done: {total_after} records survive; the torn write cost {lost} record(s) of the last, unflushed batch"
    );
    Ok(())
}

/// Cuts the last 100 bytes of data off the newest segment of `tp`: a torn
/// write. The file may end in direct-I/O padding, so the end of the valid
/// batches is found first.
fn tear_tail(data_dir: &std::path::Path, tp: &TopicPartition) -> std::io::Result<()> {
    let dir = data_dir.join(tp.dir_name());
    let mut bases: Vec<i64> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            crate::log::segment::parse_segment_file_name(e.file_name().to_str()?, "log")
        })
        .collect();
    bases.sort_unstable();
    let Some(&last) = bases.last() else {
        return Ok(());
    };
    let path = segment_file_path(&dir, last, "log");
    let bytes = std::fs::read(&path)?;
    let valid_end: usize =
        crate::log::batch::BatchIter::new(&bytes, crate::log::batch::CountRule::Compacted)
            .map_while(|r| r.ok())
            .map(|(pos, h)| pos + h.size_bytes())
            .last()
            .unwrap_or(0);
    let f = std::fs::OpenOptions::new().write(true).open(&path)?;
    f.set_len(valid_end.saturating_sub(100) as u64)?;
    Ok(())
}
