//! The raw produce baseline of `tuning/compare.sh`: the physical limit for
//! "bytes over loopback TCP into a direct-I/O file" on this machine.
//!
//! ```text
//! raw-sink sink --listen 127.0.0.1:PORT --dir DIR [--shards N] [--buf-kib 1024] [--depth 4]
//! raw-sink send --connect 127.0.0.1:PORT [--connections 4] [--duration 10] [--write-kib 1024] [--json]
//! ```
//!
//! `sink` runs one glommio executor per shard, each pinned to a CPU and bound
//! to the same address with SO_REUSEPORT (glommio's `TcpListener::bind` sets
//! it), so the kernel spreads connections over the shards. Each shard owns
//! one file `DIR/shard-N.data` opened with O_DIRECT. A connection reads into
//! an aligned DMA buffer (`--buf-kib`, default 1 MiB) and, once it is full,
//! writes it at the shard's next file position with `DmaFile::write_at`,
//! keeping up to `--depth` writes of that connection in flight. No fdatasync:
//! like both brokers' defaults, a completed write is in the file, not
//! necessarily on stable storage. When the peer shuts down its side, the sink
//! writes the last partial buffer (padded to 4 KiB), waits for every write of
//! the connection, then answers with the number of payload bytes it wrote
//! (8 bytes, little endian) and closes.
//!
//! `send` opens N blocking connections (plain threads), writes a constant
//! buffer (`--write-kib`, default 1 MiB) in a loop until `--duration` has
//! passed, shuts down its side and waits for each connection's answer. The
//! clock stops at the last answer, so the reported rate is of bytes the sink
//! acknowledged as written to the file. MB = 10^6 bytes.
//!
//! ```text
//! raw-sink pace --dir DIR --rate-mb 180 [--files 12] [--write-kib 256] [--duration 8] [--json]
//! ```
//!
//! `pace` is the latency baseline for P2: what a direct-I/O append costs on
//! this disk at a fixed byte rate, without any broker. One glommio executor
//! appends to `--files` new files (a broker's partitions), each file due a
//! `--write-kib` append at evenly spaced times so that together they make
//! `--rate-mb`. A file has one write in flight; appends that came due while
//! it was in flight go out together as the next write (up to 4 MiB), as a
//! broker's group commit does. Each append's latency runs from the time it
//! was due to the end of the write that carried it (no coordinated
//! omission). It reports percentiles and the longest write. The files are
//! deleted at the end.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream as StdTcpStream};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::io::DmaFile;
use glommio::net::{TcpListener, TcpStream};
use glommio::{LocalExecutorBuilder, Placement, Task};

const ALIGN: usize = 4096;

fn usage() -> ! {
    eprintln!(
        "usage:\n  raw-sink sink --listen HOST:PORT --dir DIR [--shards N] [--buf-kib 1024] [--depth 4]\n  \
         raw-sink send --connect HOST:PORT [--connections 4] [--duration SECS] [--write-kib 1024] [--json]\n  \
         raw-sink pace --dir DIR --rate-mb MB [--files 12] [--write-kib 256] [--duration SECS] [--json]"
    );
    std::process::exit(2)
}

struct Args(Vec<String>);

impl Args {
    fn take(&mut self, name: &str) -> Option<String> {
        let i = self.0.iter().position(|a| a == name)?;
        if i + 1 >= self.0.len() {
            eprintln!("raw-sink: {name} needs a value");
            usage();
        }
        let v = self.0.remove(i + 1);
        self.0.remove(i);
        Some(v)
    }
    fn flag(&mut self, name: &str) -> bool {
        match self.0.iter().position(|a| a == name) {
            Some(i) => {
                self.0.remove(i);
                true
            }
            None => false,
        }
    }
    fn num<T: std::str::FromStr>(&mut self, name: &str, default: T) -> T {
        match self.take(name) {
            None => default,
            Some(v) => v.parse().unwrap_or_else(|_| {
                eprintln!("raw-sink: bad value for {name}: {v}");
                usage()
            }),
        }
    }
    fn done(self) {
        if !self.0.is_empty() {
            eprintln!("raw-sink: unknown arguments: {:?}", self.0);
            usage();
        }
    }
}

fn main() {
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.is_empty() {
        usage();
    }
    let mode = argv.remove(0);
    let mut args = Args(argv);
    match mode.as_str() {
        "sink" => {
            let listen = args.take("--listen").unwrap_or_else(|| usage());
            let dir = PathBuf::from(args.take("--dir").unwrap_or_else(|| usage()));
            let ncpu = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1);
            let shards: usize = args.num("--shards", ncpu);
            let buf = args.num::<usize>("--buf-kib", 1024) * 1024;
            let depth: usize = args.num("--depth", 4);
            args.done();
            if shards == 0 || depth == 0 || buf == 0 || !buf.is_multiple_of(ALIGN) {
                eprintln!("raw-sink: --shards and --depth must be >= 1, --buf-kib a multiple of 4");
                std::process::exit(2);
            }
            sink(listen, dir, shards, ncpu, buf, depth);
        }
        "send" => {
            let addr = args.take("--connect").unwrap_or_else(|| usage());
            let conns: usize = args.num("--connections", 4);
            let secs: f64 = args.num("--duration", 10.0);
            let write = args.num::<usize>("--write-kib", 1024) * 1024;
            let json = args.flag("--json");
            args.done();
            send(addr, conns, Duration::from_secs_f64(secs), write, json);
        }
        "pace" => {
            let dir = PathBuf::from(args.take("--dir").unwrap_or_else(|| usage()));
            let rate_mb: f64 = args.num("--rate-mb", 0.0);
            let files: usize = args.num("--files", 12);
            let write = args.num::<usize>("--write-kib", 256) * 1024;
            let secs: f64 = args.num("--duration", 8.0);
            let json = args.flag("--json");
            args.done();
            if rate_mb <= 0.0 || files == 0 || write == 0 || !write.is_multiple_of(ALIGN) {
                eprintln!(
                    "raw-sink: --rate-mb must be > 0, --files >= 1, --write-kib a multiple of 4"
                );
                std::process::exit(2);
            }
            pace(
                dir,
                rate_mb,
                files,
                write,
                Duration::from_secs_f64(secs),
                json,
            );
        }
        _ => usage(),
    }
}

/// Largest write `pace` issues when appends have queued up behind one.
const PACE_WRITE_MAX: usize = 4 * 1024 * 1024;

fn pace(dir: PathBuf, rate_mb: f64, files: usize, write: usize, duration: Duration, json: bool) {
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| {
        eprintln!("raw-sink: cannot create {}: {e}", dir.display());
        std::process::exit(1)
    });
    // Seconds between two appends of one file.
    let interval = Duration::from_secs_f64(write as f64 * files as f64 / (rate_mb * 1e6));
    let executor = LocalExecutorBuilder::new(Placement::Fixed(0))
        .name("raw-sink-pace")
        .make()
        .unwrap_or_else(|e| {
            eprintln!("raw-sink pace: cannot start the executor: {e}");
            std::process::exit(1)
        });
    let result = executor.run(async {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for f in 0..files {
            let path = dir.join(format!("pace-{f}.data"));
            // Spread the files' schedules over one interval.
            let offset = interval.mul_f64(f as f64 / files as f64);
            tasks.push(glommio::spawn_local(async move {
                pace_file(path, start + offset, interval, write, duration).await
            }));
        }
        let mut latencies = Vec::new();
        let mut longest_write = Duration::ZERO;
        let mut bytes = 0u64;
        for t in tasks {
            let (l, w, b) = t.await?;
            latencies.extend(l);
            longest_write = longest_write.max(w);
            bytes += b;
        }
        Ok::<_, std::io::Error>((latencies, longest_write, bytes, start.elapsed()))
    });
    let (mut lat, longest, bytes, took) = result.unwrap_or_else(|e| {
        eprintln!("raw-sink pace: {e}");
        std::process::exit(1)
    });
    for f in 0..files {
        let _ = std::fs::remove_file(dir.join(format!("pace-{f}.data")));
    }
    lat.sort_unstable();
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 * p) as usize).min(lat.len() - 1);
        lat[i].as_secs_f64() * 1e6
    };
    let mbps = bytes as f64 / took.as_secs_f64() / 1e6;
    let (p50, p99, p999) = (pct(0.5), pct(0.99), pct(0.999));
    let max = lat.last().map_or(0.0, |d| d.as_secs_f64() * 1e6);
    let longest_us = longest.as_secs_f64() * 1e6;
    if json {
        println!(
            "{{\"appends\":{},\"mb_per_s\":{mbps:.1},\"files\":{files},\"write_bytes\":{write},\"latency_us\":{{\"p50\":{p50:.0},\"p99\":{p99:.0},\"p999\":{p999:.0},\"max\":{max:.0}}},\"longest_write_us\":{longest_us:.0}}}",
            lat.len()
        );
    } else {
        println!(
            "raw-sink pace: {} appends, {mbps:.1} MB/s over {files} files; latency p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.1} ms; longest write {:.1} ms",
            lat.len(),
            p50 / 1e3,
            p99 / 1e3,
            p999 / 1e3,
            max / 1e3,
            longest_us / 1e3
        );
    }
}

/// One file's paced appends: (latency of each append, longest write, bytes).
async fn pace_file(
    path: PathBuf,
    first_due: Instant,
    interval: Duration,
    write: usize,
    duration: Duration,
) -> std::io::Result<(Vec<Duration>, Duration, u64)> {
    let file = DmaFile::create(&path).await.map_err(std::io::Error::from)?;
    let end = first_due + duration;
    let mut latencies = Vec::new();
    let mut longest = Duration::ZERO;
    let mut position = 0u64;
    let mut next = 0u32;
    loop {
        let due = first_due + interval * next;
        if due >= end {
            break;
        }
        let now = Instant::now();
        if due > now {
            glommio::timer::sleep(due - now).await;
        }
        // Everything due by now goes out in this write.
        let now = Instant::now();
        let mut dues = vec![due];
        while dues.len() * write < PACE_WRITE_MAX {
            let d = first_due + interval * (next + dues.len() as u32);
            if d > now || d >= end {
                break;
            }
            dues.push(d);
        }
        next += dues.len() as u32;
        let len = dues.len() * write;
        let mut buf = file.alloc_dma_buffer(len);
        buf.as_bytes_mut().fill(0x5a);
        let started = Instant::now();
        file.write_at(buf, position)
            .await
            .map_err(std::io::Error::from)?;
        let done = Instant::now();
        longest = longest.max(done - started);
        position += len as u64;
        latencies.extend(dues.iter().map(|d| done - *d));
    }
    file.close().await.map_err(std::io::Error::from)?;
    Ok((latencies, longest, position))
}

fn sink(listen: String, dir: PathBuf, shards: usize, ncpu: usize, buf: usize, depth: usize) {
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| {
        eprintln!("raw-sink: cannot create {}: {e}", dir.display());
        std::process::exit(1)
    });
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let mut handles = Vec::new();
    for id in 0..shards {
        let listen = listen.clone();
        let path = dir.join(format!("shard-{id}.data"));
        let ready = ready_tx.clone();
        let h = LocalExecutorBuilder::new(Placement::Fixed(id % ncpu))
            .name(&format!("raw-sink-{id}"))
            .spawn(move || async move {
                let file = match DmaFile::create(&path).await {
                    Ok(f) => Rc::new(f),
                    Err(e) => {
                        let _ = ready.send(Err(format!("create {}: {e}", path.display())));
                        return;
                    }
                };
                let listener = match TcpListener::bind(listen.as_str()) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = ready.send(Err(format!("bind {listen}: {e}")));
                        return;
                    }
                };
                let _ = ready.send(Ok(()));
                let pos = Rc::new(Cell::new(0u64));
                loop {
                    match listener.accept().await {
                        Ok(stream) => {
                            let (file, pos) = (file.clone(), pos.clone());
                            glommio::spawn_local(async move {
                                if let Err(e) = connection(stream, file, pos, buf, depth).await {
                                    eprintln!("raw-sink shard {id}: connection: {e}");
                                }
                            })
                            .detach();
                        }
                        Err(e) => eprintln!("raw-sink shard {id}: accept: {e}"),
                    }
                }
            })
            .unwrap_or_else(|e| {
                eprintln!("raw-sink: cannot start shard {id}: {e}");
                std::process::exit(1)
            });
        handles.push(h);
    }
    drop(ready_tx);
    for _ in 0..shards {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("raw-sink: {e}");
                std::process::exit(1)
            }
            Err(_) => {
                eprintln!("raw-sink: a shard died during start-up");
                std::process::exit(1)
            }
        }
    }
    println!(
        "raw-sink listening on {listen}: {shards} shard(s), {} KiB O_DIRECT writes, depth {depth} per connection, files in {}",
        buf / 1024,
        dir.display()
    );
    let _ = std::io::stdout().flush();
    for h in handles {
        let _ = h.join();
    }
}

async fn connection(
    mut stream: TcpStream,
    file: Rc<DmaFile>,
    pos: Rc<Cell<u64>>,
    buf_size: usize,
    depth: usize,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut inflight: VecDeque<Task<glommio::Result<usize, ()>>> = VecDeque::new();
    let mut total: u64 = 0;
    loop {
        let mut buf = file.alloc_dma_buffer(buf_size);
        let mut filled = 0;
        let mut eof = false;
        while filled < buf_size {
            let n = stream.read(&mut buf.as_bytes_mut()[filled..]).await?;
            if n == 0 {
                eof = true;
                break;
            }
            filled += n;
        }
        if filled > 0 {
            let len = filled.div_ceil(ALIGN) * ALIGN;
            if len < buf_size {
                buf.as_bytes_mut()[filled..len].fill(0);
                buf.trim_to_size(len);
            }
            let at = pos.get();
            pos.set(at + len as u64);
            while inflight.len() >= depth {
                inflight
                    .pop_front()
                    .unwrap()
                    .await
                    .map_err(std::io::Error::from)?;
            }
            let f = file.clone();
            inflight.push_back(glommio::spawn_local(
                async move { f.write_at(buf, at).await },
            ));
            total += filled as u64;
        }
        if eof {
            break;
        }
    }
    for t in inflight {
        t.await.map_err(std::io::Error::from)?;
    }
    stream.write_all(&total.to_le_bytes()).await?;
    stream.close().await?;
    Ok(())
}

fn send(addr: String, conns: usize, duration: Duration, write: usize, json: bool) {
    let start = Instant::now();
    let deadline = start + duration;
    let mut threads = Vec::new();
    for c in 0..conns {
        let addr = addr.clone();
        threads.push(std::thread::spawn(
            move || -> std::io::Result<(u64, u64)> {
                let mut s = StdTcpStream::connect(&addr)?;
                s.set_nodelay(true)?;
                let data: Vec<u8> = (0..write).map(|i| (i as u8) ^ (c as u8) ^ 0x5a).collect();
                let mut sent = 0u64;
                while Instant::now() < deadline {
                    s.write_all(&data)?;
                    sent += write as u64;
                }
                s.shutdown(Shutdown::Write)?;
                let mut ack = [0u8; 8];
                s.read_exact(&mut ack)?;
                Ok((sent, u64::from_le_bytes(ack)))
            },
        ));
    }
    let (mut sent, mut written) = (0u64, 0u64);
    for t in threads {
        match t.join().expect("sender thread panicked") {
            Ok((s, w)) => {
                sent += s;
                written += w;
            }
            Err(e) => {
                eprintln!("raw-sink send: {e}");
                std::process::exit(1)
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    if sent != written {
        eprintln!("raw-sink send: sent {sent} bytes but the sink wrote {written}");
        std::process::exit(1)
    }
    let mbps = written as f64 / secs / 1e6;
    if json {
        println!(
            "{{\"bytes\":{written},\"duration_s\":{secs:.3},\"mb_per_s\":{mbps:.1},\"connections\":{conns},\"write_bytes\":{write}}}"
        );
    } else {
        println!("raw-sink send: {written} bytes in {secs:.2} s over {conns} connection(s): {mbps:.1} MB/s");
    }
}
