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
         raw-sink send --connect HOST:PORT [--connections 4] [--duration SECS] [--write-kib 1024] [--json]"
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
            let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            let shards: usize = args.num("--shards", ncpu);
            let buf = args.num::<usize>("--buf-kib", 1024) * 1024;
            let depth: usize = args.num("--depth", 4);
            args.done();
            if shards == 0 || depth == 0 || buf == 0 || buf % ALIGN != 0 {
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
        _ => usage(),
    }
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
                inflight.pop_front().unwrap().await.map_err(std::io::Error::from)?;
            }
            let f = file.clone();
            inflight.push_back(glommio::spawn_local(async move { f.write_at(buf, at).await }));
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
        threads.push(std::thread::spawn(move || -> std::io::Result<(u64, u64)> {
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
        }));
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
