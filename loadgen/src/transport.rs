//! The byte stream under a connection: plain TCP, or TLS over it, and the
//! SASL login that follows ApiVersions, as `--command-config` says. That
//! file holds the Kafka client properties an operator already gives
//! Kafka's own tools (`security.protocol`, `ssl.*`, `sasl.mechanism`,
//! `sasl.jaas.config`); it is read by the same code as `pinlog`'s
//! commands, and applies to every connection of the run.
//!
//! A connection is split into a writer and a reader on two threads, but a
//! TLS session is one state machine for both directions. The halves share
//! it under a mutex and neither holds the lock while it blocks on the
//! socket: the writer encrypts under the lock and writes the records after
//! releasing it, and the reader reads ciphertext without the lock and
//! decrypts under it. Only the writer writes to the socket, so records
//! leave in the order the session made them; anything the reader's side
//! makes the session send (an alert) goes out with the next request.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use pinlog::cli::security::ClientSecurity;

use crate::constants::READ_BUFFER_BYTES;
use crate::error::{Error, Result};

/// The security of every connection of this run; plaintext unless
/// [`configure`] was called.
static SECURITY: OnceLock<ClientSecurity> = OnceLock::new();

/// Reads `--command-config` once, before any connection is opened. With
/// `fresh_sessions`, every TLS connection makes a full handshake instead of
/// resuming an earlier session, as a new client process would.
pub fn configure(path: &Path, fresh_sessions: bool) -> Result<()> {
    let mut security = ClientSecurity::load(path).map_err(|e| Error::Other(e.to_string()))?;
    if fresh_sessions {
        if let Some(config) = &security.tls {
            let mut config = (**config).clone();
            config.resumption = rustls::client::Resumption::disabled();
            security.tls = Some(Arc::new(config));
        }
    }
    SECURITY
        .set(security)
        .map_err(|_| Error::Other("the client security was already configured".into()))
}

/// How this run connects.
pub fn security() -> &'static ClientSecurity {
    SECURITY.get_or_init(ClientSecurity::default)
}

/// The two halves of a connected stream.
pub struct Halves {
    pub writer: Box<dyn Write + Send>,
    pub reader: Box<dyn Read + Send>,
}

/// Wraps a connected socket: as is, or after a TLS handshake with the host
/// of `addr`, done here under the socket's timeouts.
pub fn wrap(socket: TcpStream, addr: &str) -> Result<Halves> {
    let clone = |s: &TcpStream| {
        s.try_clone()
            .map_err(|e| Error::io("clone socket of", addr, e))
    };
    let Some(config) = &security().tls else {
        return Ok(Halves {
            reader: Box::new(clone(&socket)?),
            writer: Box::new(socket),
        });
    };
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| Error::Other(format!("{host:?} is not a TLS server name: {e}")))?;
    let mut session = rustls::ClientConnection::new(config.clone(), name)
        .map_err(|e| Error::Other(format!("cannot start TLS to {addr}: {e}")))?;
    // A whole request is encrypted in one go, so a write is never short.
    session.set_buffer_limit(None);
    let mut handshake_socket = clone(&socket)?;
    while session.is_handshaking() {
        session
            .complete_io(&mut handshake_socket)
            .map_err(|e| Error::io("TLS handshake with", addr, e))?;
    }
    let session = Arc::new(Mutex::new(session));
    Ok(Halves {
        reader: Box::new(TlsReader {
            session: session.clone(),
            socket: clone(&socket)?,
            ciphertext: vec![0; READ_BUFFER_BYTES],
            start: 0,
            end: 0,
        }),
        writer: Box::new(TlsWriter {
            session,
            socket,
            records: Vec::with_capacity(READ_BUFFER_BYTES),
        }),
    })
}

fn poisoned() -> std::io::Error {
    std::io::Error::other("the TLS session's other half panicked")
}

/// The sending half of a TLS connection.
struct TlsWriter {
    session: Arc<Mutex<rustls::ClientConnection>>,
    socket: TcpStream,
    /// TLS records made under the lock, written after it is released.
    records: Vec<u8>,
}

impl Write for TlsWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = {
            let mut session = self.session.lock().map_err(|_| poisoned())?;
            let n = session.writer().write(buf)?;
            while session.wants_write() {
                session.write_tls(&mut self.records)?;
            }
            n
        };
        let written = self.socket.write_all(&self.records);
        self.records.clear();
        written.map(|()| n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The receiving half of a TLS connection.
struct TlsReader {
    session: Arc<Mutex<rustls::ClientConnection>>,
    socket: TcpStream,
    /// Ciphertext read from the socket; `start..end` is not yet given to
    /// the session.
    ciphertext: Vec<u8>,
    start: usize,
    end: usize,
}

impl Read for TlsReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            {
                let mut session = self.session.lock().map_err(|_| poisoned())?;
                match session.reader().read(buf) {
                    // 0 is the peer's close_notify: the end of the stream.
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                // Plaintext is only fed when the last of it was read, so the
                // session's bound on buffered plaintext is never reached.
                if self.start < self.end {
                    let mut pending = &self.ciphertext[self.start..self.end];
                    self.start += session.read_tls(&mut pending)?;
                    session
                        .process_new_packets()
                        .map_err(std::io::Error::other)?;
                    continue;
                }
            }
            let n = self.socket.read(&mut self.ciphertext)?;
            if n == 0 {
                return Ok(0);
            }
            self.start = 0;
            self.end = n;
        }
    }
}
