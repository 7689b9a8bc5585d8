//! Kafka's record-batch compression codecs, as Kafka's own Java producer
//! writes them, so that any broker and consumer accept our batches.
//!
//! A compressed RecordBatch v2 keeps its 61-byte header in the clear and
//! compresses the records section as one stream; the codec goes in the low
//! three bits of the batch attributes. Stream formats:
//!
//! * gzip (1): a gzip member (RFC 1952), as `GZIPOutputStream` writes.
//! * snappy (2): snappy-java's "xerial" framing: an 8-byte magic, two
//!   big-endian version ints (1, 1), then blocks of at most 32 KiB, each a
//!   big-endian length and a raw snappy block. Readers also accept plain raw
//!   snappy (librdkafka's reader and snappy-java's both do), and so do we.
//! * lz4 (3): the LZ4 *frame* format (magic 0x184D2204), as
//!   `KafkaLZ4BlockOutputStream` writes it: 64 KiB independent blocks, no
//!   block or content checksum, no content size.
//! * zstd (4): one standard zstd frame.
//!
//! Compression contexts are kept per producer and reused across batches
//! (gzip and zstd contexts are costly to build); decompression builds them
//! per batch. The broker uses these only in the log cleaner, which must
//! open compressed batches to drop overwritten records, and to check keys
//! on produce to a compacted topic; the load generator uses them for
//! `--compression`.

use std::borrow::Cow;
use std::io::Read;

use bytes::{BufMut, BytesMut};
use flate2::{Compress, FlushCompress, Status};

use crate::constants::{DECOMPRESSED_BATCH_MAX_BYTES, GZIP_LEVEL, SNAPPY_BLOCK_BYTES, ZSTD_LEVEL};

/// `--compression`: the codec id Kafka stores in the attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Compression {
    None = 0,
    Gzip = 1,
    Snappy = 2,
    Lz4 = 3,
    Zstd = 4,
}

impl Compression {
    pub fn id(self) -> u8 {
        self as u8
    }
    /// The codec of a batch's attribute bits, if it is one Kafka defines.
    pub fn from_id(id: u8) -> Option<Compression> {
        [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ]
        .into_iter()
        .find(|c| c.id() == id)
    }
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

/// snappy-java's stream magic: `-126 'S' 'N' 'A' 'P' 'P' 'Y' 0`.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// The stream version and the minimum compatible version after the magic.
const XERIAL_VERSION: i32 = 1;
const XERIAL_HEADER_BYTES: usize = XERIAL_MAGIC.len() + 8;
/// The fixed 10-byte gzip member header: magic, deflate, no flags, no
/// mtime, no extra flags, OS "unknown" (Java writes 0 there; any value is
/// accepted).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// A producer's compressor, its contexts reused across batches.
pub struct Compressor {
    kind: Compression,
    gzip: Option<Compress>,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    snappy: snap::raw::Encoder,
}

impl Compressor {
    pub fn new(kind: Compression) -> std::io::Result<Compressor> {
        Ok(Compressor {
            kind,
            gzip: (kind == Compression::Gzip)
                .then(|| Compress::new(flate2::Compression::new(GZIP_LEVEL), false)),
            zstd: match kind {
                Compression::Zstd => Some(zstd::bulk::Compressor::new(ZSTD_LEVEL)?),
                _ => None,
            },
            snappy: snap::raw::Encoder::new(),
        })
    }

    pub fn kind(&self) -> Compression {
        self.kind
    }

    /// Appends the compressed form of `input` to `out`.
    pub fn compress(&mut self, input: &[u8], out: &mut BytesMut) -> std::io::Result<()> {
        match self.kind {
            Compression::None => out.extend_from_slice(input),
            Compression::Gzip => {
                let z = self.gzip.as_mut().expect("gzip context for gzip");
                gzip_compress(z, input, out)?;
            }
            Compression::Snappy => {
                out.extend_from_slice(&XERIAL_MAGIC);
                out.put_i32(XERIAL_VERSION);
                out.put_i32(XERIAL_VERSION);
                for block in input.chunks(SNAPPY_BLOCK_BYTES) {
                    let len_at = out.len();
                    out.put_i32(0);
                    let start = out.len();
                    out.resize(start + snap::raw::max_compress_len(block.len()), 0);
                    let n = self
                        .snappy
                        .compress(block, &mut out[start..])
                        .map_err(std::io::Error::other)?;
                    out.truncate(start + n);
                    out[len_at..start].copy_from_slice(&(n as i32).to_be_bytes());
                }
            }
            Compression::Lz4 => {
                let info = lz4_flex::frame::FrameInfo::new()
                    .block_size(lz4_flex::frame::BlockSize::Max64KB)
                    .block_mode(lz4_flex::frame::BlockMode::Independent)
                    .block_checksums(false)
                    .content_checksum(false);
                let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, out.writer());
                std::io::Write::write_all(&mut enc, input)?;
                enc.finish().map_err(std::io::Error::other)?;
            }
            Compression::Zstd => {
                let z = self.zstd.as_mut().expect("zstd context for zstd");
                let start = out.len();
                out.resize(start + zstd::zstd_safe::compress_bound(input.len()), 0);
                let n = z.compress_to_buffer(input, &mut out[start..])?;
                out.truncate(start + n);
            }
        }
        Ok(())
    }
}

/// A gzip member around a raw deflate stream from a reused context.
fn gzip_compress(z: &mut Compress, input: &[u8], out: &mut BytesMut) -> std::io::Result<()> {
    z.reset();
    out.extend_from_slice(&GZIP_HEADER);
    let mut scratch: Vec<u8> = Vec::with_capacity(input.len() / 2 + 1024);
    loop {
        let consumed = z.total_in() as usize;
        let status = z
            .compress_vec(&input[consumed..], &mut scratch, FlushCompress::Finish)
            .map_err(std::io::Error::other)?;
        out.extend_from_slice(&scratch);
        scratch.clear();
        if status == Status::StreamEnd {
            break;
        }
        // Finish needs more output room: the next round gets a fresh buffer.
        scratch.reserve(input.len() / 2 + 1024);
    }
    let mut crc = flate2::Crc::new();
    crc.update(input);
    out.put_u32_le(crc.sum());
    out.put_u32_le(input.len() as u32);
    Ok(())
}

/// Decompresses a records section of codec `codec` (the attribute bits)
/// into `out`, refusing to produce more than `limit` bytes.
pub fn decompress(codec: u8, input: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), String> {
    let bounded = |mut r: Box<dyn Read + '_>, out: &mut Vec<u8>| -> Result<(), String> {
        let n = (&mut r)
            .take(limit as u64 + 1)
            .read_to_end(out)
            .map_err(|e| e.to_string())?;
        if n > limit {
            return Err(format!("decompresses to more than {limit} bytes"));
        }
        Ok(())
    };
    match codec {
        0 => {
            out.extend_from_slice(input);
            Ok(())
        }
        1 => bounded(Box::new(flate2::read::MultiGzDecoder::new(input)), out),
        2 => snappy_decompress(input, out, limit),
        3 => bounded(Box::new(lz4_flex::frame::FrameDecoder::new(input)), out),
        4 => bounded(
            Box::new(zstd::stream::read::Decoder::new(input).map_err(|e| e.to_string())?),
            out,
        ),
        other => Err(format!("unknown compression codec {other}")),
    }
}

/// Decompresses a batch's records section, borrowing it when it is not
/// compressed. At most [`DECOMPRESSED_BATCH_MAX_BYTES`] come out.
pub fn decompress_records(codec: u8, input: &[u8]) -> Result<Cow<'_, [u8]>, String> {
    if codec == Compression::None.id() {
        return Ok(Cow::Borrowed(input));
    }
    let mut out = Vec::with_capacity(input.len() * 2);
    decompress(codec, input, &mut out, DECOMPRESSED_BATCH_MAX_BYTES)?;
    Ok(Cow::Owned(out))
}

/// Compresses a records section with `codec`, as Kafka's producer would.
pub fn compress_records(codec: Compression, input: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = BytesMut::with_capacity(input.len() / 2 + 64);
    Compressor::new(codec)?.compress(input, &mut out)?;
    Ok(out.to_vec())
}

fn snappy_decompress(input: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), String> {
    let raw = |block: &[u8], out: &mut Vec<u8>| -> Result<(), String> {
        let n = snap::raw::decompress_len(block).map_err(|e| e.to_string())?;
        if out.len() + n > limit {
            return Err(format!("decompresses to more than {limit} bytes"));
        }
        let start = out.len();
        out.resize(start + n, 0);
        snap::raw::Decoder::new()
            .decompress(block, &mut out[start..])
            .map_err(|e| e.to_string())?;
        Ok(())
    };
    if !input.starts_with(&XERIAL_MAGIC) {
        return raw(input, out);
    }
    let mut rest = input
        .get(XERIAL_HEADER_BYTES..)
        .ok_or("xerial snappy header is truncated")?;
    while !rest.is_empty() {
        let len_bytes: [u8; 4] = rest
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or("xerial snappy block length is truncated")?;
        let len = i32::from_be_bytes(len_bytes);
        let block = usize::try_from(len)
            .ok()
            .and_then(|l| rest.get(4..4 + l))
            .ok_or_else(|| format!("xerial snappy block of {len} bytes overruns the input"))?;
        raw(block, out)?;
        rest = &rest[4 + block.len()..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// Record-like data, larger than one snappy and one lz4 block: random
    /// words from a small vocabulary, so every codec (LZ-only ones too)
    /// finds something to compress.
    fn sample() -> Vec<u8> {
        const WORDS: [&[u8]; 6] = [
            b"offset ",
            b"partition ",
            b"leader ",
            b"epoch ",
            b"batch ",
            b"42 ",
        ];
        let mut seed = 3u64;
        let mut below = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut out = Vec::with_capacity(200_000);
        while out.len() < 200_000 {
            out.extend_from_slice(WORDS[below(WORDS.len() as u64) as usize]);
            out.push(b'A' + below(26) as u8);
        }
        out
    }

    #[test]
    fn every_codec_round_trips() {
        let input = sample();
        for kind in ALL {
            let mut c = Compressor::new(kind).unwrap();
            // Twice, to exercise reused contexts.
            for _ in 0..2 {
                let mut out = BytesMut::new();
                c.compress(&input, &mut out).unwrap();
                if kind != Compression::None {
                    assert!(out.len() < input.len(), "{kind:?} did not compress");
                }
                let mut back = Vec::new();
                decompress(kind.id(), &out, &mut back, input.len()).unwrap();
                assert!(back == input, "{kind:?} round trip");
            }
        }
    }

    #[test]
    fn streams_have_kafkas_framing() {
        let input = sample();
        let framed = |kind| {
            let mut out = BytesMut::new();
            Compressor::new(kind)
                .unwrap()
                .compress(&input, &mut out)
                .unwrap();
            out
        };
        let gz = framed(Compression::Gzip);
        assert_eq!(&gz[..3], &[0x1f, 0x8b, 8]);
        let sn = framed(Compression::Snappy);
        assert_eq!(&sn[..8], &XERIAL_MAGIC);
        assert_eq!(&sn[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
        let lz = framed(Compression::Lz4);
        // Frame magic (LE), then FLG = version 01 + block independence, no
        // checksums, no content size (0x60); BD = 64 KiB blocks (0x40): the
        // descriptor KafkaLZ4BlockOutputStream writes.
        assert_eq!(&lz[..4], &0x184D_2204u32.to_le_bytes());
        assert_eq!(lz[4], 0x60, "FLG");
        assert_eq!(lz[5], 0x40, "BD");
        let zs = framed(Compression::Zstd);
        assert_eq!(&zs[..4], &0xFD2F_B528u32.to_le_bytes());
    }

    #[test]
    fn raw_snappy_is_accepted_too() {
        let input = sample();
        let raw = snap::raw::Encoder::new().compress_vec(&input).unwrap();
        let mut back = Vec::new();
        decompress(2, &raw, &mut back, input.len()).unwrap();
        assert!(back == input);
    }

    #[test]
    fn decompression_is_bounded_and_checked() {
        let input = sample();
        for kind in &ALL[1..] {
            let mut out = BytesMut::new();
            Compressor::new(*kind)
                .unwrap()
                .compress(&input, &mut out)
                .unwrap();
            let mut back = Vec::new();
            let err = decompress(kind.id(), &out, &mut back, 1000).unwrap_err();
            assert!(err.contains("more than"), "{kind:?}: {err}");
            // Truncated streams fail instead of panicking.
            let mut back = Vec::new();
            assert!(
                decompress(kind.id(), &out[..out.len() / 2], &mut back, input.len()).is_err(),
                "{kind:?}"
            );
        }
        assert!(decompress(7, b"", &mut Vec::new(), 10).is_err());
    }

    #[test]
    fn system_tools_read_our_streams() {
        // gzip, lz4 and zstd command-line tools, where installed, are
        // independent readers of the same formats.
        let input = sample();
        for (kind, tool, args) in [
            (Compression::Gzip, "gzip", &["-dc"][..]),
            (Compression::Lz4, "lz4", &["-dc"][..]),
            (Compression::Zstd, "zstd", &["-dc"][..]),
        ] {
            let mut out = BytesMut::new();
            Compressor::new(kind)
                .unwrap()
                .compress(&input, &mut out)
                .unwrap();
            let child = std::process::Command::new(tool)
                .args(args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn();
            let Ok(mut child) = child else {
                eprintln!("{tool} not installed; skipped");
                continue;
            };
            let mut stdin = child.stdin.take().unwrap();
            let data = out.to_vec();
            let writer = std::thread::spawn(move || {
                std::io::Write::write_all(&mut stdin, &data).unwrap();
            });
            let result = child.wait_with_output().unwrap();
            writer.join().unwrap();
            assert!(result.status.success(), "{tool} failed");
            assert!(result.stdout == input, "{tool} output differs");
        }
    }
}
