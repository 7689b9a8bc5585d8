//! Every fixed limit and Kafka default in one place.
//!
//! Settings an operator can change live in [`config`](super::config); their defaults
//! are defined here so that the relations between limits can be checked at
//! compile time.

/// Bytes before a record batch's `batchLength` field: base offset (8) and the
/// length itself (4). Kafka calls this `LOG_OVERHEAD`.
pub const LOG_OVERHEAD: usize = 12;
/// Size of the RecordBatch v2 header, up to and including the record count.
pub const RECORD_BATCH_HEADER_SIZE: usize = 61;
/// The only record batch format pinlog stores.
pub const RECORD_BATCH_MAGIC_V2: i8 = 2;

/// One offset-index entry: relative offset (u32) and file position (u32).
pub const OFFSET_INDEX_ENTRY_SIZE: usize = 8;
/// One time-index entry: timestamp (i64) and relative offset (u32).
pub const TIME_INDEX_ENTRY_SIZE: usize = 12;

/// Kafka's `log.segment.bytes` default: 1 GiB.
pub const DEFAULT_SEGMENT_BYTES: u64 = 1 << 30;
/// Kafka's `log.roll.ms` default: 7 days.
pub const DEFAULT_SEGMENT_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// Kafka's `log.index.size.max.bytes` default: 10 MiB.
pub const DEFAULT_SEGMENT_INDEX_BYTES: u64 = 10 * 1024 * 1024;
/// Kafka's `log.index.interval.bytes` default.
pub const DEFAULT_INDEX_INTERVAL_BYTES: u64 = 4096;
/// Kafka's `log.retention.ms` default: 7 days.
pub const DEFAULT_RETENTION_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// Kafka's `log.retention.bytes` default: unlimited.
pub const DEFAULT_RETENTION_BYTES: i64 = -1;
/// Kafka's `log.flush.interval.messages` default (Long.MAX_VALUE): never by
/// count.
pub const DEFAULT_FLUSH_MESSAGES: u64 = i64::MAX as u64;
/// Kafka's `log.flush.interval.ms` default (Long.MAX_VALUE): never by time.
pub const DEFAULT_FLUSH_MS: u64 = i64::MAX as u64;
/// Kafka's `message.max.bytes` default (1 MiB plus record batch overhead).
pub const DEFAULT_MAX_BATCH_BYTES: usize = 1024 * 1024 + LOG_OVERHEAD;

/// Kafka's `delete.retention.ms` (`log.cleaner.delete.retention.ms`) default:
/// one day that a tombstone survives after the cleaner first kept it.
pub const DEFAULT_DELETE_RETENTION_MS: i64 = 24 * 60 * 60 * 1000;
/// Kafka's `min.cleanable.dirty.ratio` (`log.cleaner.min.cleanable.ratio`)
/// default.
pub const DEFAULT_MIN_CLEANABLE_DIRTY_RATIO: f64 = 0.5;
/// Kafka's `min.compaction.lag.ms` (`log.cleaner.min.compaction.lag.ms`)
/// default: records may be compacted as soon as they leave the active segment.
pub const DEFAULT_MIN_COMPACTION_LAG_MS: i64 = 0;
/// Kafka's `max.compaction.lag.ms` (`log.cleaner.max.compaction.lag.ms`)
/// default (Long.MAX_VALUE): no deadline.
pub const DEFAULT_MAX_COMPACTION_LAG_MS: i64 = i64::MAX;
/// Kafka's `log.cleaner.backoff.ms` default: how often each shard looks for
/// a log to clean.
pub const DEFAULT_LOG_CLEANER_BACKOFF_MS: u64 = 15_000;
/// Kafka's `log.cleaner.dedupe.buffer.size` default: 128 MiB for the key to
/// offset maps of all cleaners together. Kafka splits it across
/// `log.cleaner.threads`; pinlog has one cleaner per shard and splits it
/// across shards, so the broker's total stays Kafka's.
pub const DEFAULT_LOG_CLEANER_DEDUPE_BUFFER_SIZE: u64 = 128 * 1024 * 1024;
/// Kafka's `log.cleaner.io.buffer.size` default: 512 KiB of read and write
/// buffers for all cleaners together, split like the dedupe buffer.
pub const DEFAULT_LOG_CLEANER_IO_BUFFER_SIZE: u64 = 512 * 1024;
/// Kafka's `log.cleaner.io.buffer.load.factor`: how full the key to offset
/// map may get before a clean stops at the records mapped so far.
pub const LOG_CLEANER_IO_BUFFER_LOAD_FACTOR: f64 = 0.9;
/// A shard's share of the dedupe buffer never falls below this, however many
/// shards there are: a map too small to hold a useful number of keys would
/// make every clean a short one.
pub const LOG_CLEANER_DEDUPE_BUFFER_PER_SHARD_MIN: u64 = 1024 * 1024;
/// A shard's read (and write) buffer never falls below this. A batch larger
/// than the buffer is read whole on its own, as Kafka grows its buffers.
pub const LOG_CLEANER_IO_BUFFER_PER_SHARD_MIN: u64 = 64 * 1024;
/// Kafka's per-data-directory checkpoint of each compacted partition's first
/// dirty offset (where the last clean ended).
pub const CLEANER_OFFSET_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";

/// xerial snappy-java's block size, as Kafka's producer uses it.
pub const SNAPPY_BLOCK_BYTES: usize = 32 * 1024;
/// Kafka's default compression levels (`compression.gzip.level`,
/// `compression.zstd.level`). lz4_flex has a single (fast) level.
pub const GZIP_LEVEL: u32 = 6;
pub const ZSTD_LEVEL: i32 = 3;

/// No record batch the broker opens (the log cleaner, key checks on produce
/// to a compacted topic) may decompress to more than this: a guard against
/// compression bombs. 64 times the default `message.max.bytes` leaves room
/// for any real producer's compression ratio.
pub const DECOMPRESSED_BATCH_MAX_BYTES: usize = 64 * DEFAULT_MAX_BATCH_BYTES;

/// Block size that DMA (O_DIRECT) writes are aligned to. 4 KiB covers every
/// logical block size we expect (512 B and 4 KiB devices) and the page size.
pub const DMA_ALIGNMENT: u64 = 4096;
/// Upper bound on bytes written to a segment in one DMA write. Larger appends
/// are split so that a single write never needs an unbounded buffer.
pub const DMA_WRITE_BYTES_MAX: usize = 4 * 1024 * 1024;
/// Upper bound on the produce requests' bytes that one group commit joins
/// into a write (it always takes at least one request): one DMA write, so a
/// group never waits on a second one.
pub const GROUP_COMMIT_MAX_BYTES: usize = DMA_WRITE_BYTES_MAX;
/// A follower's Fetch that lacks a partition the follower just gained on
/// this leader (`node::follower_gains`) is parked at most this long, not
/// `replica.fetch.wait.max.ms`: the follower's fetcher adds the partition
/// to its next Fetch as soon as it has applied the same image, usually
/// within a few milliseconds of the leader.
pub const FOLLOWER_JOIN_RECHECK_MS: u64 = 20;
/// ... and a gain the follower's Fetches still lack after this long is
/// forgotten (its replica may be offline there), so it cannot keep the
/// follower's Fetches short for longer: at most 250 short answers.
pub const FOLLOWER_JOIN_GRACE_MS: i64 = 5_000;

/// Largest single read of a segment file range: one io_uring read, and the
/// buffer one piece occupies until the socket has taken it.
pub const FILE_READ_PIECE_BYTES: usize = 1 << 20;
/// Reads of a response (or of a read-through) kept in flight ahead of the
/// socket, per connection.
/// With [`FILE_READ_PIECE_BYTES`] this bounds a connection's read buffers to
/// 4 MiB, and keeps the disk busy while the socket drains.
pub const FILE_READS_AHEAD: usize = 4;
/// An active segment's file is grown (`fallocate`, size included) up to
/// this far ahead of its writes: as far ahead as the segment holds bytes,
/// from `SEGMENT_ALLOCATE_AHEAD_MIN_BYTES` to this. An O_DIRECT write that
/// extends a file cannot be done without waiting for block allocation, so
/// io_uring hands every such write to an io-wq worker thread: 18,000 a
/// second at a flat-out produce here, each a context switch. A write into
/// blocks already allocated is submitted inline. The file is cut back to
/// its logical size when the segment rolls or closes, and recovery takes
/// the zeros past the last batch for what they are. The cost is disk
/// space: up to this much per active segment that is written to, reserved
/// until the segment rolls; a partition that holds little (most of
/// `__consumer_offsets`) reserves little.
pub const SEGMENT_ALLOCATE_AHEAD_BYTES: u64 = 8 * 1024 * 1024;
/// The least a segment's file is grown ahead by, and the unit it is grown in.
pub const SEGMENT_ALLOCATE_AHEAD_MIN_BYTES: u64 = 256 * 1024;

/// A read that missed the read cache reads at least this much of the
/// segment (as far as it is written), and caches what the fetch does not
/// take, as the kernel's readahead does for Kafka. A consumer reading on
/// then finds its next fetches in memory, and the batch that a fetch's byte
/// limit cut in two is not read from the disk a second time (with 1 MiB
/// per partition and 256 KiB batches, that was a quarter of every read).
pub const READ_AHEAD_BYTES: u64 = (FILE_READS_AHEAD * FILE_READ_PIECE_BYTES) as u64;
/// The read cache's default ceiling (when `read.cache.bytes` is not set)
/// leaves this share of the machine's memory (or of the cgroup's limit) to
/// everything else: a quarter, so the cache may hold three quarters. Kafka
/// serves reads from all the memory the machine has free; the budget under
/// the ceiling follows the free memory (`memory.rs`), so the ceiling only
/// keeps the cache from taking the last of it on an idle machine, where the
/// indexes, the connections and the I/O pools still need room.
pub const READ_CACHE_CEILING_SPARE_DIVISOR: u64 = 4;
/// The cache leaves at least this share of the memory limit free (an
/// eighth: 3 GiB of 24), whatever else runs: room for another process to
/// start, and for the kernel's own caches of the indexes and binaries,
/// before the shards' watch (at most a second later) gives memory back.
pub const READ_CACHE_HEADROOM_DIVISOR: u64 = 8;
/// ... and at least this much, on small machines.
pub const READ_CACHE_HEADROOM_MIN_BYTES: u64 = 256 * 1024 * 1024;
/// The budget never drops below this, for the whole broker, however short
/// memory is (unless `read.cache.bytes` is lower): the tail of the active
/// partitions, which tailing consumers and followers read from memory.
pub const READ_CACHE_FLOOR_BYTES: u64 = 64 * 1024 * 1024;
/// Memory pressure (PSI `some avg10`, percent of time some task stalled on
/// memory) at which the cache gives back memory even though `MemAvailable`
/// looks fine: reclaim is already hurting someone.
pub const READ_CACHE_PSI_SHRINK_PERCENT: f64 = 10.0;
/// Memory pressure at which the cache stops growing.
pub const READ_CACHE_PSI_HOLD_PERCENT: f64 = 1.0;
/// Under pressure the budget drops below what the cache holds by this
/// share a check (an eighth a second): fast enough to relieve the machine
/// within seconds, slow enough not to throw away a warm cache for a blip.
pub const READ_CACHE_SHRINK_DIVISOR: u64 = 8;
/// How often each shard reads the machine's memory and resets its cache's
/// budget: three small file reads, on a timer.
pub const READ_CACHE_CHECK_INTERVAL_MS: u64 = 1000;
/// When a shard's read cache holds at least this much less than at its
/// last check (a deleted topic, retention, a truncation, a lower budget),
/// the allocator's free pages go back to the kernel (`malloc_trim`). The
/// allocator keeps freed 4 MiB buffers for reuse otherwise, and a broker
/// that deleted a 15 GiB topic held all of it. Below this, what was freed
/// is left for the cache's next fills.
pub const READ_CACHE_GIVE_BACK_MIN_BYTES: usize = 64 * 1024 * 1024;
/// The read cache's size when the machine's memory cannot be read.
pub const READ_CACHE_FALLBACK_BYTES: usize = 256 * 1024 * 1024;
/// A buffer whose cached batches are less than this fraction of it (1/4)
/// is let go: its batches are copied into buffers of their own. The read
/// cache counts each buffer its batches keep alive, whole, so a sliver of a
/// 4 MiB read-ahead costs the cache 4 MiB; past 1/4 the copy (at most a
/// quarter of the buffer, once) is cheaper than the memory it pins for as
/// long as the sliver stays recently used.
pub const READ_CACHE_SPARSE_BUFFER_DIVISOR: usize = 4;
/// The read cache takes the memory for its copies (a leader's records, a
/// read-ahead) in blocks of this size, whose pages it takes in bulk and
/// reuses after eviction (`log::cache_blocks`): a read-ahead fills one.
pub const READ_CACHE_BLOCK_BYTES: usize = READ_AHEAD_BYTES as usize;
/// Freed blocks a shard keeps for reuse (32 MiB); a block freed past this
/// goes back to the kernel at once, so a deleted topic's memory does not
/// stay with the broker.
pub const READ_CACHE_SPARE_BLOCKS: usize = 8;
/// The cache copies into blocks only while its budget holds at least this
/// many of them (64 MiB): in a smaller cache a block, counted whole, would
/// be too large a share, and the cache would copy its batches out again.
pub const READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS: usize = 16;
/// Spin before an idle shard parks on a CPU the kernel reserves for the
/// broker, chosen when `shard.spin.before.park.us` is unset (`shard::spin`;
/// elsewhere 0): measured on this machine, parking right away
/// costs ~1.6 ms p99 per cross-core hop, spinning 50 µs ~30 µs; under paced
/// produce on shared cores it cost 0.1-0.5 of a core per shard
/// (`tuning/README.md`, "Spin before park").
pub const RESERVED_CORE_SPIN_BEFORE_PARK_US: u64 = 50;
/// Default aligned I/O memory per shard (glommio's `io_memory`): the pool
/// that DMA reads and writes take their buffers from, registered with
/// io_uring when the memlock limit allows. Past it, buffers come from the
/// heap: fresh pages for every read, which costs a page fault per 4 KiB.
/// Sized for a shard serving 8 catch-up connections, each with
/// `FILE_READS_AHEAD` pieces of `FILE_READ_PIECE_BYTES` in flight.
pub const DEFAULT_SHARD_IO_MEMORY_BYTES: usize = 32 * 1024 * 1024;
/// Partitions a shard opens at once when it starts. Opening is a chain of
/// small file operations (open, stat, mmap of the indexes, checkpoint
/// reads), most of them waits on io_uring; one at a time, 5,000 partitions
/// per shard took 2 s to open. After a crash each open may scan segments
/// with a `RECOVERY_READ_CHUNK_BYTES` buffer, so this also bounds recovery's
/// memory per shard (16 x 4 MiB).
pub const PARTITION_OPENS_IN_FLIGHT: usize = 16;
/// Locks that serialise opens of one partition; different partitions mostly
/// take different locks and open in parallel.
pub const PARTITION_OPEN_LOCK_STRIPES: usize = 64;
/// How long a clean shutdown waits for tasks that took a partition's log
/// before the shutdown began (a background checkpoint write, a disk read in
/// flight) to let go of it, before it counts the close as unclean.
pub const SHUTDOWN_LOG_HOLDERS_WAIT_MS: u64 = 10_000;
/// Slots in glommio 0.9's per-executor blocking-pool request queue
/// (`sys/blocking.rs`: `flume::bounded(4 << 10)`).
pub const GLOMMIO_BLOCKING_QUEUE_SLOTS: usize = 4 << 10;
/// Blocking-pool calls one shard has in flight at most (`blocking_pool`):
/// far below `GLOMMIO_BLOCKING_QUEUE_SLOTS`, so a task never waits on that
/// queue and is never woken by a pool thread.
pub const BLOCKING_CALLS_IN_FLIGHT_MAX: usize = 256;
/// Depth of each cross-shard channel: the bound on in-flight requests from one
/// shard to another.
pub const SHARD_CHANNEL_DEPTH: usize = 1024;

/// Reads scan at most this many bytes of a segment past an index entry when
/// looking for an offset; the index interval bounds the real distance.
pub const READ_SCAN_CHUNK_BYTES: usize = 64 * 1024;
/// Recovery reads segments in chunks of this size.
pub const RECOVERY_READ_CHUNK_BYTES: usize = 4 * 1024 * 1024;

/// Name of the clean-shutdown marker in a data directory (Kafka's name).
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
/// pinlog's record of this data directory's last broker registration: its
/// broker epoch and the machine's boot id (see `log/data_dir.rs`).
pub const LAST_REGISTRATION_FILE: &str = "last-registration.json";
/// Where Linux gives the id of the current boot.
pub const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";
/// Kafka's per-data-directory checkpoint of each partition's recovery point.
pub const RECOVERY_POINT_CHECKPOINT_FILE: &str = "recovery-point-offset-checkpoint";
/// Kafka's high-watermark checkpoint file in each data directory.
pub const REPLICATION_OFFSET_CHECKPOINT_FILE: &str = "replication-offset-checkpoint";
/// Kafka's per-data-directory checkpoint of each partition's log start offset.
pub const LOG_START_OFFSET_CHECKPOINT_FILE: &str = "log-start-offset-checkpoint";
/// Kafka's per-partition leader-epoch checkpoint.
pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";
/// pinlog's record of the partitions moved off their default shard
/// (`pinlog partition move`, the core balancer): `topic partition shard`
/// lines in the checkpoint format, read at startup (see
/// `shard/partition_table.rs`).
pub const SHARD_PLACEMENT_FILE: &str = "shard-placement";

/// Width of the zero-padded base offset in segment file names.
pub const SEGMENT_NAME_DIGITS: usize = 20;

const _: () = assert!(RECORD_BATCH_HEADER_SIZE > LOG_OVERHEAD);
// The headroom is less than what the default ceiling spares, so that on an
// idle machine the ceiling, not the headroom, bounds the cache.
const _: () = assert!(READ_CACHE_HEADROOM_DIVISOR > READ_CACHE_CEILING_SPARE_DIVISOR);
const _: () = assert!(READ_CACHE_FLOOR_BYTES < READ_CACHE_FALLBACK_BYTES as u64);
const _: () = assert!(READ_CACHE_PSI_HOLD_PERCENT < READ_CACHE_PSI_SHRINK_PERCENT);
const _: () = assert!(BLOCKING_CALLS_IN_FLIGHT_MAX * 4 <= GLOMMIO_BLOCKING_QUEUE_SLOTS);
const _: () = assert!(DMA_WRITE_BYTES_MAX % DMA_ALIGNMENT as usize == 0);
const _: () = assert!(SEGMENT_ALLOCATE_AHEAD_MIN_BYTES % DMA_ALIGNMENT == 0);
const _: () = assert!(SEGMENT_ALLOCATE_AHEAD_BYTES % SEGMENT_ALLOCATE_AHEAD_MIN_BYTES == 0);
const _: () = assert!(DEFAULT_SEGMENT_INDEX_BYTES % OFFSET_INDEX_ENTRY_SIZE as u64 == 0);
const _: () = assert!(DEFAULT_SEGMENT_BYTES <= u32::MAX as u64);
const _: () = assert!(LOG_CLEANER_IO_BUFFER_PER_SHARD_MIN as usize >= RECORD_BATCH_HEADER_SIZE);
const _: () =
    assert!(LOG_CLEANER_DEDUPE_BUFFER_PER_SHARD_MIN <= DEFAULT_LOG_CLEANER_DEDUPE_BUFFER_SIZE);
