//! The socket under a TLS session. rustls reads ciphertext 4 KiB at a time
//! and writes each TLS record (at most 16 KiB) with its own call; on a
//! bare glommio socket each of those calls is a system call, which at a
//! gigabyte a second is a quarter of a million of them. This socket gives
//! the session a receive buffer (glommio's preallocated one) and collects
//! the records it writes until the session flushes, so a fetch response of
//! a megabyte leaves in a few large writes instead of one per record.
//!
//! Every writer of a TLS stream here flushes after each message (the
//! response writer, the peers' request writers), which is when the records
//! go out; a writer that did not flush would leave them in the buffer.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};
use glommio::net::{Preallocated, TcpStream};

/// Bytes of the receive buffer: a TLS record and a half, so that most
/// reads of the session take whole records from memory.
pub const TLS_SOCKET_READ_BUFFER_BYTES: usize = 32 * 1024;
/// Collected records are written out once they reach this many bytes,
/// even before a flush, so a large response streams.
pub const TLS_SOCKET_WRITE_BATCH_BYTES: usize = 256 * 1024;
/// What the write buffer keeps of its capacity between messages: an idle
/// connection holds no more than this.
const TLS_SOCKET_WRITE_RETAINED_BYTES: usize = 16 * 1024;

pub struct TlsSocket {
    stream: TcpStream<Preallocated>,
    /// Records not yet written; `written..` of it is still to go.
    pending: Vec<u8>,
    written: usize,
}

impl TlsSocket {
    pub fn new(stream: TcpStream) -> TlsSocket {
        TlsSocket {
            stream: stream.buffered_with(Preallocated::new(TLS_SOCKET_READ_BUFFER_BYTES)),
            pending: Vec::new(),
            written: 0,
        }
    }

    /// Writes out everything collected.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n =
                ready!(Pin::new(&mut self.stream).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.pending.clear();
        self.written = 0;
        if self.pending.capacity() > TLS_SOCKET_WRITE_RETAINED_BYTES {
            self.pending.shrink_to(TLS_SOCKET_WRITE_RETAINED_BYTES);
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for TlsSocket {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsSocket {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.pending.len() >= TLS_SOCKET_WRITE_BATCH_BYTES {
            ready!(self.poll_drain(cx))?;
        }
        self.pending.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.stream).poll_close(cx)
    }
}
