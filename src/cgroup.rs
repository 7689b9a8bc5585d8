//! This process's cgroup: the directory whose files a controller (memory,
//! cpuset, cpu) reads its limits from, in cgroup v2's unified hierarchy or
//! in v1's hierarchy of that controller.
//!
//! Used by the read cache's memory watch (`memory.rs`) and by the choice of
//! the shards' spin before park (`shard::spin`). Reading is a few small
//! files the kernel answers from memory; a missing file is `None`.

use std::path::{Path, PathBuf};

/// The cgroup file systems' usual mount point.
const CGROUP_MOUNT: &str = "/sys/fs/cgroup";

/// This process's cgroup directory for one controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupDir {
    /// Where its files are.
    pub dir: PathBuf,
    /// The hierarchy's root as mounted here: `dir` is the root itself when
    /// the process sits in the root cgroup, in a cgroup namespace, or in a
    /// cgroup that is not mounted here.
    pub mount: PathBuf,
    /// cgroup v2's unified hierarchy, not v1's hierarchy of the controller.
    pub v2: bool,
}

/// Where the v1 hierarchy of `controller` is mounted under `root`: a
/// directory named after it (systemd's link for a co-mounted hierarchy),
/// or one named after the controllers mounted together (`cpu,cpuacct`),
/// recognised by its `v1_probe` file.
fn v1_mount(root: &Path, controller: &str, v1_probe: &str) -> Option<PathBuf> {
    let named = root.join(controller);
    if named.join(v1_probe).exists() {
        return Some(named);
    }
    std::fs::read_dir(root)
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .find(|dir| {
            let co_mounted = dir
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.split(',').any(|c| c == controller));
            co_mounted && dir.join(v1_probe).exists()
        })
}

impl CgroupDir {
    /// From `/proc/self/cgroup`: the v1 hierarchy of `controller` when it is
    /// mounted (`v1_probe` is one of its files, which tells it from a v2
    /// mount of the same name), else the v2 entry (`0::/path`).
    pub fn find(controller: &str, v1_probe: &str) -> Option<CgroupDir> {
        let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        Self::find_in(&text, Path::new(CGROUP_MOUNT), controller, v1_probe)
    }

    /// [`find`](Self::find) from a `/proc/self/cgroup` text, with the cgroup
    /// file systems mounted under `root`. Inside a cgroup namespace the
    /// path is `/`, the mount's own root; a path that is not mounted here
    /// falls back to the root.
    pub fn find_in(text: &str, root: &Path, controller: &str, v1_probe: &str) -> Option<CgroupDir> {
        let under = |mount: &Path, path: &str| {
            let dir = mount.join(path.trim_start_matches('/'));
            if dir.is_dir() {
                dir
            } else {
                mount.to_path_buf()
            }
        };
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(controllers), Some(path)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if controllers.split(',').any(|c| c == controller) {
                if let Some(mount) = v1_mount(root, controller, v1_probe) {
                    return Some(CgroupDir {
                        dir: under(&mount, path),
                        mount,
                        v2: false,
                    });
                }
            }
        }
        let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
        root.join("cgroup.controllers").exists().then(|| CgroupDir {
            dir: under(root, path),
            mount: root.to_path_buf(),
            v2: true,
        })
    }

    /// One of the directory's files, `None` when it cannot be read.
    pub fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.join(name)).ok()
    }

    /// This cgroup and each of its ancestors below the hierarchy's root,
    /// nearest first: a limit set on any of them applies to the process.
    pub fn lineage(&self) -> impl Iterator<Item = CgroupDir> + '_ {
        self.dir
            .ancestors()
            .take_while(|dir| dir.starts_with(&self.mount) && *dir != self.mount)
            .map(|dir| CgroupDir {
                dir: dir.to_path_buf(),
                mount: self.mount.clone(),
                v2: self.v2,
            })
    }

    /// Whether the process sits in the hierarchy's root (as far as this
    /// mount shows): the root's files describe the whole machine, not a
    /// limit or a reservation of this process's own.
    pub fn is_root(&self) -> bool {
        self.dir == self.mount
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn finds_the_v2_directory_below_the_mount_or_the_mount_itself() {
        let root = tempfile::tempdir().unwrap();
        write(root.path(), "cgroup.controllers", "cpu memory\n");
        let dir = root.path().join("system.slice/pinlog.service");
        write(&dir, "memory.max", "4294967296\n");
        let c = CgroupDir::find_in(
            "0::/system.slice/pinlog.service\n",
            root.path(),
            "memory",
            "memory.limit_in_bytes",
        )
        .unwrap();
        assert!(c.v2 && !c.is_root());
        assert_eq!(c.dir, dir);
        let lineage: Vec<PathBuf> = c.lineage().map(|c| c.dir).collect();
        assert_eq!(lineage, vec![dir.clone(), root.path().join("system.slice")]);
        assert_eq!(c.read("memory.max").as_deref(), Some("4294967296\n"));
        // Inside a cgroup namespace the path is the mount's root.
        let c =
            CgroupDir::find_in("0::/\n", root.path(), "memory", "memory.limit_in_bytes").unwrap();
        assert!(c.is_root());
        assert_eq!(c.dir, root.path());
        assert_eq!(
            c.lineage().count(),
            0,
            "the root is no limit of the process's own"
        );
    }

    #[test]
    fn finds_a_v1_hierarchy_by_its_controller_and_falls_back_to_its_mount() {
        let root = tempfile::tempdir().unwrap();
        let mount = root.path().join("cpuset");
        write(&mount, "cpuset.cpus", "0-3\n");
        let dir = mount.join("pinlog");
        write(&dir, "cpuset.cpus", "2-3\n");
        let text = "7:cpuset:/pinlog\n4:memory:/x\n0::/\n";
        let c = CgroupDir::find_in(text, root.path(), "cpuset", "cpuset.cpus").unwrap();
        assert!(!c.v2 && !c.is_root());
        assert_eq!(c.read("cpuset.cpus").as_deref(), Some("2-3\n"));
        // A path that is not mounted here: the mount's own files.
        let c = CgroupDir::find_in(
            "7:cpuset:/elsewhere\n",
            root.path(),
            "cpuset",
            "cpuset.cpus",
        )
        .unwrap();
        assert!(c.is_root());
        // A co-mounted hierarchy with no link named after the controller.
        write(
            &root.path().join("cpu,cpuacct/pinlog"),
            "cpu.cfs_quota_us",
            "-1\n",
        );
        write(&root.path().join("cpu,cpuacct"), "cpu.cfs_quota_us", "-1\n");
        let c = CgroupDir::find_in(
            "5:cpu,cpuacct:/pinlog\n",
            root.path(),
            "cpu",
            "cpu.cfs_quota_us",
        )
        .unwrap();
        assert_eq!(c.dir, root.path().join("cpu,cpuacct/pinlog"));
        // No such hierarchy, and no v2 mount either.
        assert!(CgroupDir::find_in("1:cpu:/\n", root.path(), "cpuset", "cpuset.cpus").is_none());
    }
}
