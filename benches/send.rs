//! Send paths from memory into a TCP socket, side by side: what a fetch
//! served from the read cache costs now, and what it would cost if the
//! cache's memory could be handed to the socket without a copy (issue 33,
//! direction 2). Each variant sends the same bytes to a receiver thread
//! that reads them into one 1 MiB buffer and drops them, as a consumer
//! does; the figures are throughput and the CPU time of both threads per
//! GB, since on loopback the kernel charges the receive path to whichever
//! thread is running.
//!
//! Variants (`PINLOG_BENCH_ONLY=<name>` runs one, for `perf record`):
//!
//! - `send`: `send(2)` from a heap region that is already mapped. This is
//!   pinlog's path for a cache hit: the cached `Bytes` are written to the
//!   socket, which copies them into socket buffers.
//! - `sendfile`: `sendfile(2)` from a memfd holding the same bytes. The
//!   socket takes references to the memfd's pages and copies nothing: the
//!   path of a cache kept in a memfd, for a batch already in it.
//! - `msg_zerocopy`: `send(2)` with `MSG_ZEROCOPY` from the heap region,
//!   reaping the completions from the error queue. It pins user pages
//!   instead of copying them; on loopback and veth the kernel copies them
//!   at delivery instead (the completions say so), so it shows whether that
//!   mechanism survives these paths.
//! - `copy_send` and `fill_sendfile`: a batch sent once after it was
//!   written, the common case of a tailing consumer. Both first copy each
//!   chunk from the source (standing in for the `recv` that brought it in,
//!   which either design pays), `copy_send` into a heap ring that is reused
//!   and then `send`, `fill_sendfile` into memfd pages that were given back
//!   first (a hole punched, as eviction would) and then `sendfile`. A memfd
//!   range must never be rewritten in place while a socket may still hold
//!   its pages, so each fill faults in fresh zeroed pages: this pair prices
//!   that against the copy the socket no longer makes.
//! - `rewrite_sendfile`: `fill_sendfile` without the punch, rewriting pages
//!   that a socket may still hold. Not a correct design (a consumer could
//!   receive the new bytes in place of the old); it is here to show how much
//!   of `fill_sendfile`'s cost is the fresh pages.
//!
//! Paths: loopback always; a veth pair into a network namespace the bench
//! creates and deletes, when it runs as root with `ip` (otherwise it says so
//! and skips it). A veth pair, like a real NIC's driver, does not copy page
//! references on transmit, but it does not free them until the receiver has
//! read the data either.
//!
//! Environment: `PINLOG_BENCH_SCALE` (default 1: 4 GiB per run from a
//! 256 MiB source region), `PINLOG_BENCH_ROUNDS` (default 3; the order of
//! the variants rotates each round, and the table shows medians).

use std::fs::File;
use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;
use std::ptr::NonNull;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const MIB: usize = 1024 * 1024;
/// Bytes per send call: a fetch's default `max.partition.fetch.bytes`.
const CHUNK_BYTES: usize = MIB;
/// The memory the bytes are sent from at scale 1: well past the CPU's
/// caches, as a read cache is.
const SOURCE_BYTES: usize = 256 * MIB;
/// Bytes sent per run at scale 1.
const TOTAL_BYTES: u64 = 4 << 30;
/// The receiver's read buffer.
const RECEIVE_BUFFER_BYTES: usize = MIB;
/// How long `msg_zerocopy` waits for its last completions.
const ZEROCOPY_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// From linux/errqueue.h, which the libc crate does not carry: the origin
/// of a MSG_ZEROCOPY completion, and its code when the kernel copied the
/// data after all.
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;
const VETH_SENDER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 251, 0, 1);
const VETH_RECEIVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 251, 0, 2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Send,
    Sendfile,
    MsgZerocopy,
    CopySend,
    FillSendfile,
    RewriteSendfile,
}

const VARIANTS: [Variant; 6] = [
    Variant::Send,
    Variant::Sendfile,
    Variant::MsgZerocopy,
    Variant::CopySend,
    Variant::FillSendfile,
    Variant::RewriteSendfile,
];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Send => "send",
            Variant::Sendfile => "sendfile",
            Variant::MsgZerocopy => "msg_zerocopy",
            Variant::CopySend => "copy_send",
            Variant::FillSendfile => "fill_sendfile",
            Variant::RewriteSendfile => "rewrite_sendfile",
        }
    }

    /// The variant each is compared with: the path pinlog takes now for the
    /// same work.
    fn baseline(self) -> Variant {
        match self {
            Variant::CopySend | Variant::FillSendfile | Variant::RewriteSendfile => {
                Variant::CopySend
            }
            _ => Variant::Send,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Measure {
    gb_per_s: f64,
    sender_cpu_s_per_gb: f64,
    receiver_cpu_s_per_gb: f64,
    /// `msg_zerocopy` only: completions the kernel marked as copied, of all.
    zerocopy_copied: Option<(u64, u64)>,
}

impl Measure {
    fn total_cpu_s_per_gb(&self) -> f64 {
        self.sender_cpu_s_per_gb + self.receiver_cpu_s_per_gb
    }
}

/// CPU time of the calling thread, user and system, in seconds.
fn thread_cpu_seconds() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid out-pointer for the call's duration.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(rc, 0, "getrusage: {}", io::Error::last_os_error());
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

fn check(rc: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if rc < 0 {
        let err = io::Error::last_os_error();
        Err(io::Error::new(err.kind(), format!("{what}: {err}")))
    } else {
        Ok(rc)
    }
}

/// A shared mapping of a memfd: the memory a memfd-backed cache would hold.
struct Memfd {
    fd: OwnedFd,
    map: NonNull<u8>,
    len: usize,
}

impl Memfd {
    fn new(len: usize) -> io::Result<Memfd> {
        // SAFETY: a valid NUL-terminated name; the fd is owned below.
        let raw = check(
            unsafe { libc::memfd_create(c"pinlog-send-bench".as_ptr(), libc::MFD_CLOEXEC) },
            "memfd_create",
        )?;
        // SAFETY: `raw` was just returned to us and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        check(
            unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) },
            "ftruncate",
        )?;
        // SAFETY: maps the whole file, which is `len` bytes long.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Memfd {
            fd,
            map: NonNull::new(map as *mut u8).expect("mmap returned a non-null map"),
            len,
        })
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes, writable, and only we use it.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_ptr(), self.len) }
    }

    /// Gives the pages of `offset..offset + len` back, as eviction would:
    /// the next write there faults in fresh zeroed pages, and a socket that
    /// still holds the old ones keeps them untouched.
    fn punch(&self, offset: usize, len: usize) -> io::Result<()> {
        check(
            unsafe {
                libc::fallocate(
                    self.fd.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    offset as libc::off_t,
                    len as libc::off_t,
                )
            },
            "fallocate(PUNCH_HOLE)",
        )
        .map(drop)
    }
}

impl Drop for Memfd {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped.
        unsafe { libc::munmap(self.map.as_ptr() as *mut libc::c_void, self.len) };
    }
}

/// Deterministic bytes that do not compress or repeat within a chunk.
fn fill_pattern(buf: &mut [u8]) {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for word in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        word.copy_from_slice(&bytes[..word.len()]);
    }
}

fn send_all(fd: RawFd, buf: &[u8], flags: libc::c_int) -> io::Result<()> {
    let mut sent = 0;
    while sent < buf.len() {
        // SAFETY: `buf[sent..]` is valid for reads for the call.
        let n = unsafe {
            libc::send(
                fd,
                buf[sent..].as_ptr() as *const libc::c_void,
                buf.len() - sent,
                flags,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            // MSG_ZEROCOPY: the socket's option memory is full of pending
            // completions; the caller reaps and retries.
            if err.raw_os_error() == Some(libc::ENOBUFS) || err.kind() == io::ErrorKind::Interrupted
            {
                return Err(err);
            }
            return Err(io::Error::new(err.kind(), format!("send: {err}")));
        }
        sent += n as usize;
    }
    Ok(())
}

fn sendfile_all(socket: RawFd, file: RawFd, offset: usize, len: usize) -> io::Result<()> {
    let mut position = offset as libc::off_t;
    let end = (offset + len) as libc::off_t;
    while position < end {
        // SAFETY: `position` is a valid in/out pointer for the call.
        let n = unsafe { libc::sendfile(socket, file, &mut position, (end - position) as usize) };
        check(n as libc::c_int, "sendfile")?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "sendfile sent nothing",
            ));
        }
    }
    Ok(())
}

/// MSG_ZEROCOPY completions: how many sends the kernel has finished with,
/// and how many of those it copied after all.
#[derive(Default)]
struct Completions {
    done: u64,
    copied: u64,
}

impl Completions {
    /// Reads every completion queued on the socket's error queue, without
    /// waiting. Each notification covers a range of send calls.
    fn reap(&mut self, fd: RawFd) -> io::Result<()> {
        loop {
            let mut control = [0u8; 128];
            // SAFETY: a zeroed msghdr is valid; the control buffer outlives
            // the call.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = control.len();
            let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
            if n < 0 {
                let err = io::Error::last_os_error();
                return match err.kind() {
                    io::ErrorKind::WouldBlock => Ok(()),
                    _ => Err(io::Error::new(
                        err.kind(),
                        format!("recvmsg(MSG_ERRQUEUE): {err}"),
                    )),
                };
            }
            // SAFETY: walks the control messages the kernel wrote into
            // `control`, within `msg_controllen`.
            let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
            while !cmsg.is_null() {
                let header = unsafe { &*cmsg };
                let is_recverr = (header.cmsg_level == libc::SOL_IP
                    && header.cmsg_type == libc::IP_RECVERR)
                    || (header.cmsg_level == libc::SOL_IPV6
                        && header.cmsg_type == libc::IPV6_RECVERR);
                if is_recverr {
                    let err = unsafe {
                        std::ptr::read_unaligned(
                            libc::CMSG_DATA(cmsg) as *const libc::sock_extended_err
                        )
                    };
                    if err.ee_origin == SO_EE_ORIGIN_ZEROCOPY {
                        // ee_info..=ee_data is the range of sends completed.
                        let sends = u64::from(err.ee_data.wrapping_sub(err.ee_info)) + 1;
                        self.done += sends;
                        if err.ee_code == SO_EE_CODE_ZEROCOPY_COPIED {
                            self.copied += sends;
                        }
                    }
                }
                cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
            }
        }
    }
}

/// Where the receiver listens.
#[derive(Clone, Copy)]
enum Path {
    Loopback,
    Veth,
}

/// A veth pair whose far end is in a network namespace of its own; deleted
/// with the namespace on drop.
struct VethNamespace {
    namespace: String,
}

impl VethNamespace {
    fn create() -> Result<VethNamespace, String> {
        let id = std::process::id();
        let namespace = format!("pinlog-send-bench-{id}");
        let (near, far) = (format!("pl-sb{id}a"), format!("pl-sb{id}b"));
        let veth = VethNamespace {
            namespace: namespace.clone(),
        };
        let sender = format!("{VETH_SENDER_ADDR}/30");
        let receiver = format!("{VETH_RECEIVER_ADDR}/30");
        let steps: Vec<Vec<&str>> = vec![
            vec!["netns", "add", &namespace],
            vec!["link", "add", &near, "type", "veth", "peer", "name", &far],
            vec!["link", "set", &far, "netns", &namespace],
            vec!["addr", "add", &sender, "dev", &near],
            vec!["link", "set", &near, "up"],
            vec!["-n", &namespace, "addr", "add", &receiver, "dev", &far],
            vec!["-n", &namespace, "link", "set", &far, "up"],
            vec!["-n", &namespace, "link", "set", "lo", "up"],
        ];
        for args in steps {
            let out = Command::new("ip")
                .args(&args)
                .output()
                .map_err(|e| format!("ip: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "ip {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        Ok(veth)
    }
}

/// Moves the calling thread into the network namespace `namespace`.
fn enter_namespace(namespace: &str) -> io::Result<()> {
    let handle = File::open(format!("/var/run/netns/{namespace}"))?;
    check(
        unsafe { libc::setns(handle.as_raw_fd(), libc::CLONE_NEWNET) },
        "setns",
    )
    .map(drop)
}

impl Drop for VethNamespace {
    fn drop(&mut self) {
        // Deleting the namespace deletes the veth pair with it.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.namespace])
            .status();
    }
}

/// Starts a receiver that accepts one connection and reads `total` bytes;
/// returns its address and the thread, which yields its CPU seconds.
fn start_receiver(
    path: Path,
    veth: Option<&VethNamespace>,
    total: u64,
) -> io::Result<(SocketAddr, thread::JoinHandle<io::Result<f64>>)> {
    let namespace = veth.map(|v| v.namespace.clone());
    let (ready_tx, ready_rx) = mpsc::channel();
    let handle = thread::spawn(move || -> io::Result<f64> {
        let listener = match (path, namespace) {
            (Path::Veth, Some(namespace)) => {
                enter_namespace(&namespace)?;
                TcpListener::bind((VETH_RECEIVER_ADDR, 0))?
            }
            _ => TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?,
        };
        ready_tx
            .send(listener.local_addr()?)
            .map_err(|_| io::Error::other("the sender went away"))?;
        let (mut stream, _) = listener.accept()?;
        let mut buf = vec![0u8; RECEIVE_BUFFER_BYTES];
        let start = thread_cpu_seconds();
        let mut received = 0u64;
        while received < total {
            let n = stream.read(&mut buf)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "sender closed early",
                ));
            }
            received += n as u64;
        }
        Ok(thread_cpu_seconds() - start)
    });
    let addr = ready_rx
        .recv_timeout(Duration::from_secs(10))
        .map_err(|_| io::Error::other("the receiver did not start"))?;
    Ok((addr, handle))
}

struct Sources {
    heap: Vec<u8>,
    /// `copy_send`'s destination: reused, so its pages stay mapped.
    heap_ring: Vec<u8>,
    memfd: Memfd,
    /// `fill_sendfile`'s destination, punched before each fill.
    memfd_ring: Memfd,
}

impl Sources {
    fn new(len: usize) -> io::Result<Sources> {
        let mut heap = vec![0u8; len];
        fill_pattern(&mut heap);
        let mut memfd = Memfd::new(len)?;
        memfd.bytes_mut().copy_from_slice(&heap);
        let heap_ring = heap.clone();
        let mut memfd_ring = Memfd::new(len)?;
        memfd_ring.bytes_mut().copy_from_slice(&heap);
        Ok(Sources {
            heap,
            heap_ring,
            memfd,
            memfd_ring,
        })
    }
}

fn run_variant(
    variant: Variant,
    path: Path,
    veth: Option<&VethNamespace>,
    sources: &mut Sources,
    total: u64,
) -> io::Result<Measure> {
    let (addr, receiver) = start_receiver(path, veth, total)?;
    let stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    let fd = stream.as_raw_fd();
    let len = sources.heap.len();
    let mut completions = Completions::default();
    let mut zerocopy_sends = 0u64;
    if variant == Variant::MsgZerocopy {
        let one: libc::c_int = 1;
        check(
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_ZEROCOPY,
                    &one as *const _ as *const libc::c_void,
                    std::mem::size_of_val(&one) as libc::socklen_t,
                )
            },
            "setsockopt(SO_ZEROCOPY)",
        )?;
    }
    let started = Instant::now();
    let cpu_start = thread_cpu_seconds();
    let mut sent = 0u64;
    while sent < total {
        let offset = (sent % len as u64) as usize;
        let chunk = CHUNK_BYTES.min(len - offset).min((total - sent) as usize);
        let range = offset..offset + chunk;
        match variant {
            Variant::Send => send_all(fd, &sources.heap[range], 0)?,
            Variant::Sendfile => sendfile_all(fd, sources.memfd.fd.as_raw_fd(), offset, chunk)?,
            Variant::MsgZerocopy => loop {
                completions.reap(fd)?;
                match send_all(fd, &sources.heap[range.clone()], libc::MSG_ZEROCOPY) {
                    Ok(()) => {
                        zerocopy_sends += 1;
                        break;
                    }
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                        thread::sleep(Duration::from_micros(50))
                    }
                    Err(e) => return Err(e),
                }
            },
            Variant::CopySend => {
                sources.heap_ring[range.clone()].copy_from_slice(&sources.heap[range.clone()]);
                send_all(fd, &sources.heap_ring[range], 0)?;
            }
            Variant::FillSendfile => {
                sources.memfd_ring.punch(offset, chunk)?;
                sources.memfd_ring.bytes_mut()[range.clone()].copy_from_slice(&sources.heap[range]);
                sendfile_all(fd, sources.memfd_ring.fd.as_raw_fd(), offset, chunk)?;
            }
            Variant::RewriteSendfile => {
                sources.memfd_ring.bytes_mut()[range.clone()].copy_from_slice(&sources.heap[range]);
                sendfile_all(fd, sources.memfd_ring.fd.as_raw_fd(), offset, chunk)?;
            }
        }
        sent += chunk as u64;
    }
    let sender_cpu = thread_cpu_seconds() - cpu_start;
    let receiver_cpu = receiver
        .join()
        .map_err(|_| io::Error::other("the receiver panicked"))??;
    let elapsed = started.elapsed().as_secs_f64();
    // MSG_ZEROCOPY sends are not complete until the kernel says so (a
    // partial send counts as several; wait for at least one per chunk).
    let zerocopy_copied = if variant == Variant::MsgZerocopy {
        let deadline = Instant::now() + ZEROCOPY_DRAIN_TIMEOUT;
        while completions.done < zerocopy_sends && Instant::now() < deadline {
            completions.reap(fd)?;
            thread::sleep(Duration::from_millis(1));
        }
        Some((completions.copied, completions.done))
    } else {
        None
    };
    let gb = total as f64 / 1e9;
    Ok(Measure {
        gb_per_s: gb / elapsed,
        sender_cpu_s_per_gb: sender_cpu / gb,
        receiver_cpu_s_per_gb: receiver_cpu / gb,
        zerocopy_copied,
    })
}

fn env_number(name: &str, default: f64) -> f64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {v:?}")),
        Err(_) => default,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn report(path_name: &str, results: &[(Variant, Vec<Measure>)]) {
    println!("\n### {path_name}\n");
    println!("| variant | GB/s | sender CPU s/GB | receiver CPU s/GB | total CPU s/GB | total CPU vs its baseline | throughput vs its baseline | zero-copy completions copied |");
    println!("|---|---|---|---|---|---|---|---|");
    let med = |v: Variant, f: fn(&Measure) -> f64| {
        results
            .iter()
            .find(|(w, _)| *w == v)
            .map(|(_, ms)| median(ms.iter().map(f).collect()))
    };
    for (variant, measures) in results {
        let gbps = med(*variant, |m| m.gb_per_s).unwrap_or(f64::NAN);
        let sender = med(*variant, |m| m.sender_cpu_s_per_gb).unwrap_or(f64::NAN);
        let receiver = med(*variant, |m| m.receiver_cpu_s_per_gb).unwrap_or(f64::NAN);
        let total = med(*variant, Measure::total_cpu_s_per_gb).unwrap_or(f64::NAN);
        let baseline = variant.baseline();
        let ratio = |x: f64, b: Option<f64>| match b {
            Some(b) if baseline != *variant => format!("{:.2}x ({})", x / b, baseline.name()),
            _ => "-".to_string(),
        };
        let copied = measures
            .last()
            .and_then(|m| m.zerocopy_copied)
            .map(|(c, d)| format!("{c} of {d}"))
            .unwrap_or_else(|| "-".to_string());
        println!(
            "| {} | {gbps:.2} | {sender:.3} | {receiver:.3} | {total:.3} | {} | {} | {copied} |",
            variant.name(),
            ratio(total, med(baseline, Measure::total_cpu_s_per_gb)),
            ratio(gbps, med(baseline, |m| m.gb_per_s)),
        );
    }
}

fn main() -> io::Result<()> {
    let scale = env_number("PINLOG_BENCH_SCALE", 1.0);
    assert!(scale > 0.0, "PINLOG_BENCH_SCALE must be positive");
    let rounds = (env_number("PINLOG_BENCH_ROUNDS", 3.0) as usize).max(1);
    let only = std::env::var("PINLOG_BENCH_ONLY").ok();
    let source_len =
        ((SOURCE_BYTES as f64 * scale.min(1.0)) as usize / CHUNK_BYTES).max(4) * CHUNK_BYTES;
    let total = ((TOTAL_BYTES as f64 * scale) as u64).max(4 * CHUNK_BYTES as u64);
    let variants: Vec<Variant> = VARIANTS
        .into_iter()
        .filter(|v| only.as_deref().is_none_or(|o| o == v.name()))
        .collect();
    eprintln!(
        "send bench: {} MiB per run from {} MiB of memory, {rounds} rounds",
        total >> 20,
        source_len >> 20
    );
    let mut sources = Sources::new(source_len)?;
    let veth = match VethNamespace::create() {
        Ok(v) => Some(v),
        Err(why) => {
            eprintln!("send bench: no veth path ({why}); it needs root and iproute2");
            None
        }
    };
    let mut paths = vec![(Path::Loopback, "loopback")];
    if veth.is_some() {
        paths.push((Path::Veth, "veth pair into a network namespace"));
    }
    println!("## Send paths (`cargo bench --bench send`)");
    for (path, path_name) in paths {
        let mut results: Vec<(Variant, Vec<Measure>)> =
            variants.iter().map(|v| (*v, Vec::new())).collect();
        for round in 0..rounds {
            for i in 0..results.len() {
                let index = (i + round) % results.len();
                let variant = results[index].0;
                eprintln!("  {path_name}, round {}: {}", round + 1, variant.name());
                let measure = run_variant(variant, path, veth.as_ref(), &mut sources, total)?;
                results[index].1.push(measure);
            }
        }
        report(path_name, &results);
    }
    Ok(())
}
