//! `pinlog-powerfs MOUNT BACKING`: mounts the power-loss file system at
//! MOUNT over BACKING and serves it until SIGINT or SIGTERM (then
//! unmounts). Signals drive it from a shell or another process:
//! - SIGUSR1: a power cut that forgets every unsynced change;
//! - SIGUSR2: a power cut that keeps a random prefix of each file's
//!   unsynced data changes (a disk's write cache); the seed is printed.
//!
//! Each cut prints one line saying what it undid. Kill the writers first.

use std::path::PathBuf;
use std::process::ExitCode;

use pinlog_powerfs::{CutMode, PowerFs};

fn usage() -> ExitCode {
    eprintln!("usage: pinlog-powerfs MOUNT BACKING");
    ExitCode::from(2)
}

/// Blocks the signals we wait for in this thread and every thread it
/// starts later, so that `sigwait` receives them.
fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset manipulation on a zeroed set we own, then
    // pthread_sigmask on this thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGUSR1, libc::SIGUSR2] {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [mountpoint, backing] = args.as_slice() else {
        return usage();
    };
    let set = block_signals();
    let fs = match PowerFs::mount(mountpoint, backing) {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!(
                "pinlog-powerfs: mount {} over {}: {e}",
                mountpoint.display(),
                backing.display()
            );
            return ExitCode::FAILURE;
        }
    };
    println!("pinlog-powerfs: mounted {}", mountpoint.display());
    loop {
        let mut sig = 0;
        // SAFETY: sigwait(3) on the set blocked above.
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        let mode = match sig {
            libc::SIGUSR1 => CutMode::DropAll,
            libc::SIGUSR2 => {
                let seed = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0);
                CutMode::KeepRandomPrefix { seed }
            }
            _ => break,
        };
        match fs.power_cut(mode) {
            Ok(report) => println!("pinlog-powerfs: power cut ({mode:?}): {report:?}"),
            Err(e) => {
                eprintln!("pinlog-powerfs: power cut failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    match fs.unmount() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pinlog-powerfs: unmount: {e}");
            ExitCode::FAILURE
        }
    }
}
