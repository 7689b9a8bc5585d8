//! Works around glommio 0.9's io_uring poll-ring probe.
//!
//! The first `DmaFile` a glommio thread opens on a block device decides,
//! once per thread, whether reads on that device go to the IOPOLL ring: it
//! issues a real read at offset 0 and treats success as "polling works". On
//! a freshly created (empty) file that read succeeds with 0 bytes even where
//! the device cannot poll, and every later read on the device then fails
//! with EOPNOTSUPP. We therefore make sure the first file a shard opens on a
//! device holds data, so the probe reaches the device and learns the truth.

use std::cell::RefCell;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::constants::DMA_ALIGNMENT;
use crate::error::{LogError, LogResult};

const PROBE_FILE_NAME: &str = ".pinlog-direct-io-probe";

thread_local! {
    /// Devices (st_dev) this thread's glommio reactor has probed.
    static PROBED_DEVICES: RefCell<HashSet<u64>> = RefCell::new(HashSet::new());
}

/// Primes glommio's poll-ring probe for the device holding `dir`. Cheap after
/// the first call per device on a thread. Blocking file creation here runs
/// once per shard per device, at startup.
pub async fn ensure_probed(dir: &Path) -> LogResult<()> {
    let dev = std::fs::metadata(dir)
        .map_err(|e| LogError::io("stat data dir", dir, -1, e))?
        .dev();
    if PROBED_DEVICES.with(|p| p.borrow().contains(&dev)) {
        return Ok(());
    }
    let probe = dir.join(format!(
        "{PROBE_FILE_NAME}-{:?}",
        std::thread::current().id()
    ));
    std::fs::write(&probe, vec![0u8; DMA_ALIGNMENT as usize])
        .map_err(|e| LogError::io("write direct I/O probe", &probe, -1, e))?;
    let file = glommio::io::DmaFile::open(&probe)
        .await
        .map_err(|e| LogError::io("open direct I/O probe", &probe, -1, e))?;
    file.close()
        .await
        .map_err(|e| LogError::io("close direct I/O probe", &probe, -1, e))?;
    std::fs::remove_file(&probe)
        .map_err(|e| LogError::io("remove direct I/O probe", &probe, -1, e))?;
    PROBED_DEVICES.with(|p| p.borrow_mut().insert(dev));
    Ok(())
}
