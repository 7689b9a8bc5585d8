//! Cuts a connection's byte stream into request frames (INT32 size, then
//! that many bytes) without copying them.
//!
//! Bytes are read straight into a buffer and each frame is split off it as
//! `Bytes`, so a produce request's records reach the partition owner as a
//! slice of the buffer the socket filled. One read may carry several small
//! frames (one syscall for many pipelined requests).
//!
//! A frame of up to [`WHOLE_FRAME_MAX_BYTES`] (twice the 1 MiB default of
//! Kafka's `max.request.size`) gets a buffer of its own size as soon as its
//! size prefix is in: one allocation, read into where it stays. Growing a
//! buffer by doubling instead copied what had arrived at each step and
//! touched twice the frame's size in fresh pages, a cost a produce flat
//! out pays on every request. A larger frame's buffer grows with the bytes
//! that actually arrive, so a hostile size prefix never makes the broker
//! reserve more than that maximum beyond what the peer has sent.
//!
//! The buffer is zeroed once as it grows (a read needs initialized bytes),
//! never again for each read: a TLS stream hands out one record (16 KiB)
//! per read, and zeroing the rest of a megabyte frame before each of them
//! cost more than decrypting it. A whole frame's buffer comes zeroed from
//! the allocator (`calloc`), which gets a large one as fresh zero pages
//! from the kernel without writing them.

use bytes::{Buf, Bytes, BytesMut};
use futures_lite::AsyncReadExt;

/// Bytes requested from the socket when no frame size says more.
pub const READ_AHEAD_BYTES: usize = 64 * 1024;
/// The largest frame that is given a buffer of its own size once its size
/// prefix has arrived; a larger one grows with its bytes (see the module
/// doc). Twice Kafka's `max.request.size` default (1 MiB), so that a
/// client's produce request fits, and so does one that packs a full 1 MiB
/// of batches and then adds the request's own headers.
pub const WHOLE_FRAME_MAX_BYTES: usize = 2 * 1024 * 1024;
const SIZE_PREFIX: usize = 4;

/// Why the stream cannot go on.
#[derive(Debug)]
pub enum FrameError {
    /// The peer broke the framing; the message says how.
    Protocol(String),
    Io(std::io::Error),
}

pub struct FrameReader {
    /// `..filled` holds bytes read; the rest is zeroed room for the next
    /// reads.
    buf: BytesMut,
    filled: usize,
    max_frame: usize,
    /// The setting `max_frame` comes from, for the error.
    limit_name: &'static str,
}

impl FrameReader {
    pub fn new(max_frame: usize) -> Self {
        FrameReader {
            buf: BytesMut::new(),
            filled: 0,
            max_frame,
            limit_name: "socket.request.max.bytes",
        }
    }

    /// Changes the largest frame accepted from the next one on: a SASL
    /// connection accepts `sasl.server.max.receive.size` until it has
    /// authenticated, then `socket.request.max.bytes`.
    pub fn set_max_frame(&mut self, max_frame: usize, limit_name: &'static str) {
        self.max_frame = max_frame;
        self.limit_name = limit_name;
    }

    /// The size of the frame at the front of the buffer, once known.
    fn frame_size(&self) -> Result<Option<usize>, FrameError> {
        if self.filled < SIZE_PREFIX {
            return Ok(None);
        }
        let size = i32::from_be_bytes(self.buf[..SIZE_PREFIX].try_into().expect("4 bytes"));
        if size < 0 {
            return Err(FrameError::Protocol(format!("negative frame size {size}")));
        }
        let size = size as usize;
        if size > self.max_frame {
            return Err(FrameError::Protocol(format!(
                "frame of {size} bytes exceeds {} ({})",
                self.limit_name, self.max_frame
            )));
        }
        Ok(Some(size))
    }

    /// Moves what has arrived of the frame ending at `end` into a zeroed
    /// buffer of exactly that size.
    fn take_whole_frame_buffer(&mut self, end: usize) {
        let mut whole = BytesMut::zeroed(end);
        whole[..self.filled].copy_from_slice(&self.buf[..self.filled]);
        self.buf = whole;
    }

    /// The next frame, `None` when the peer closed between frames.
    pub async fn next<R: futures_lite::AsyncRead + Unpin>(
        &mut self,
        reader: &mut R,
    ) -> Result<Option<Bytes>, FrameError> {
        loop {
            let want = match self.frame_size()? {
                Some(size) if self.filled >= SIZE_PREFIX + size => {
                    self.buf.advance(SIZE_PREFIX);
                    self.filled -= SIZE_PREFIX + size;
                    return Ok(Some(self.buf.split_to(size).freeze()));
                }
                Some(size) => {
                    let end = SIZE_PREFIX + size;
                    if size <= WHOLE_FRAME_MAX_BYTES && self.buf.len() < end {
                        self.take_whole_frame_buffer(end);
                    }
                    let missing = end - self.filled;
                    // A larger frame grows toward its end, at most doubling
                    // what has arrived so far (at least one read-ahead), so
                    // memory follows the bytes the peer really sends.
                    if self.buf.len() >= end {
                        missing
                    } else {
                        missing.min(self.filled.max(READ_AHEAD_BYTES))
                    }
                }
                None => READ_AHEAD_BYTES,
            };
            let filled = self.filled;
            if self.buf.len() < filled + want {
                self.buf.resize(filled + want, 0);
            }
            let n = match reader.read(&mut self.buf[filled..filled + want]).await {
                Ok(n) => n,
                Err(e) => return Err(FrameError::Io(e)),
            };
            self.filled += n;
            if n == 0 {
                return match filled {
                    0 => Ok(None),
                    _ if filled < SIZE_PREFIX => Err(FrameError::Protocol(
                        "connection closed inside a frame size".into(),
                    )),
                    _ => Err(FrameError::Protocol(format!(
                        "connection closed after {} of {} frame bytes",
                        filled - SIZE_PREFIX,
                        self.frame_size()?.unwrap_or(0)
                    ))),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// Hands out its bytes in fixed-size pieces, like a slow socket.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        step: usize,
        /// The length of each read asked of it.
        asked: Vec<usize>,
    }

    impl Trickle {
        fn new(data: Vec<u8>, step: usize) -> Self {
            Trickle {
                data,
                at: 0,
                step,
                asked: Vec::new(),
            }
        }
    }

    impl futures_lite::AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut [u8],
        ) -> Poll<std::io::Result<usize>> {
            self.asked.push(buf.len());
            let n = buf.len().min(self.step).min(self.data.len() - self.at);
            let at = self.at;
            buf[..n].copy_from_slice(&self.data[at..at + n]);
            self.at += n;
            Poll::Ready(Ok(n))
        }
    }

    fn framed(frames: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for f in frames {
            out.extend_from_slice(&(f.len() as i32).to_be_bytes());
            out.extend_from_slice(f);
        }
        out
    }

    fn read_all(data: Vec<u8>, step: usize, max: usize) -> (Vec<Bytes>, Option<String>) {
        futures_lite::future::block_on(async {
            let mut src = Trickle::new(data, step);
            let mut r = FrameReader::new(max);
            let mut out = Vec::new();
            loop {
                match r.next(&mut src).await {
                    Ok(Some(f)) => out.push(f),
                    Ok(None) => return (out, None),
                    Err(FrameError::Protocol(m)) => return (out, Some(m)),
                    Err(FrameError::Io(e)) => return (out, Some(e.to_string())),
                }
            }
        })
    }

    #[test]
    fn frames_come_out_whole_however_the_bytes_arrive() {
        let big = vec![7u8; 3 * READ_AHEAD_BYTES + 5];
        let frames: Vec<&[u8]> = vec![b"a", b"", b"hello", &big, b"z"];
        let data = framed(&frames);
        for step in [1, 3, 4, 5, 1000, usize::MAX] {
            let (got, err) = read_all(data.clone(), step, 1 << 20);
            assert_eq!(err, None, "step {step}");
            let got: Vec<&[u8]> = got.iter().map(|b| &b[..]).collect();
            assert_eq!(got, frames, "step {step}");
        }
    }

    #[test]
    fn broken_framing_is_refused_with_a_reason() {
        let (_, err) = read_all(vec![0, 0], 10, 100);
        assert!(err.unwrap().contains("inside a frame size"));
        let mut d = framed(&[b"abcdef"]);
        d.truncate(7);
        let (_, err) = read_all(d, 10, 100);
        assert!(err.unwrap().contains("after 3 of 6"));
        let (_, err) = read_all((-1i32).to_be_bytes().to_vec(), 10, 100);
        assert!(err.unwrap().contains("negative"));
        let (_, err) = read_all(framed(&[&[0u8; 101]]), 10, 100);
        assert!(err.unwrap().contains("socket.request.max.bytes"));
    }

    #[test]
    fn a_huge_size_prefix_does_not_reserve_its_size() {
        // Claims 1 GiB, sends 10 bytes, closes.
        let mut d = (1i32 << 30).to_be_bytes().to_vec();
        d.extend_from_slice(&[1; 10]);
        futures_lite::future::block_on(async {
            let mut src = Trickle::new(d, usize::MAX);
            let mut r = FrameReader::new(usize::MAX);
            assert!(r.next(&mut src).await.is_err());
            assert!(
                r.buf.capacity() <= 4 * READ_AHEAD_BYTES,
                "{}",
                r.buf.capacity()
            );
        });
    }

    /// The reads a reader asks of a source that hands out everything at
    /// once, and the frame it returns.
    fn reads_of_one_frame(len: usize) -> (Vec<usize>, Bytes) {
        futures_lite::future::block_on(async {
            let frame = vec![3u8; len];
            let mut src = Trickle::new(framed(&[&frame]), usize::MAX);
            let mut r = FrameReader::new(usize::MAX);
            let got = r
                .next(&mut src)
                .await
                .expect("a frame")
                .expect("not closed");
            assert_eq!(&got[..], &frame[..]);
            (src.asked, got)
        })
    }

    #[test]
    fn a_frame_up_to_the_whole_frame_maximum_is_read_into_one_buffer_of_its_size() {
        for len in [READ_AHEAD_BYTES * 4, WHOLE_FRAME_MAX_BYTES] {
            let (asked, _) = reads_of_one_frame(len);
            // The read-ahead that brought the size prefix, then the rest of
            // the frame in one read: no buffer grown step by step.
            assert_eq!(
                asked,
                vec![READ_AHEAD_BYTES, len + SIZE_PREFIX - READ_AHEAD_BYTES],
                "a frame of {len} bytes"
            );
        }
    }

    #[test]
    fn a_frame_above_the_whole_frame_maximum_grows_with_what_arrives() {
        let len = WHOLE_FRAME_MAX_BYTES * 3;
        let (asked, _) = reads_of_one_frame(len);
        // Each read asks at most for what has arrived so far: the buffer
        // at most doubles.
        let mut arrived = 0;
        for (i, n) in asked.iter().enumerate() {
            assert!(
                i == 0 || *n <= arrived,
                "read {i} asked for {n} bytes with {arrived} arrived: {asked:?}"
            );
            arrived += n;
        }
        assert_eq!(arrived, len + SIZE_PREFIX);
    }
}
