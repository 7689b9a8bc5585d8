//! Hosts for the fault suite: one network namespace per node, joined by
//! veth pairs to a bridge in the test's own namespace, and nftables drop
//! rules inside a node's namespace for partitions and packet loss.
//!
//! ```text
//!   test process (clients, 10.R.S.254) ── bridge plbr<pid>
//!        ├── veth ── namespace pinlog-f<pid>-1 (node 1, 10.R.S.1)
//!        ├── veth ── namespace pinlog-f<pid>-2 (node 2, 10.R.S.2)
//!        └── ...
//! ```
//!
//! Every name carries the test process's pid, so concurrent test binaries
//! never share one, and [`Testbed::create`] first removes what a killed
//! earlier run left behind. Dropping the testbed deletes the namespaces
//! (with their veth ends) and the bridge.
//!
//! Faults are rules in one table (`inet pinlog_faults`) of a node's own
//! namespace, so healing a node is deleting that table. A node's own
//! rules never touch the clients unless the fault says so
//! ([`Testbed::isolate`]).

use std::process::Command;
use std::time::Duration;

use super::run_command;

/// The first two octets of every testbed's addresses; the third is
/// derived from the pid.
const SUBNET_PREFIX: &str = "10.213";
/// The test process's own address on the bridge (the clients').
const CLIENT_HOST_OCTET: u8 = 254;
const NAME_PREFIX: &str = "pinlog-f";
const NFT_TABLE: &str = "pinlog_faults";
/// Bound on any single `ip` or `nft` command.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);

/// Namespaces, a bridge and addresses for `n` nodes.
pub struct Testbed {
    pid: u32,
    subnet: u8,
    nodes: usize,
}

impl Testbed {
    /// Builds the namespaces and the bridge, or says why it cannot (not
    /// root, no `ip` or `nft`, namespaces refused).
    pub fn create(nodes: usize) -> Result<Testbed, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("network namespaces need root".into());
        }
        for tool in ["ip", "nft"] {
            if super::which(tool).is_none() {
                return Err(format!(
                    "`{tool}` is not installed (apt-get install iproute2 nftables)"
                ));
            }
        }
        remove_leftovers();
        let pid = std::process::id();
        let bed = Testbed {
            pid,
            // 1..=250, so that two test processes rarely share a subnet;
            // names, not addresses, keep them apart when they do.
            subnet: (pid % 250) as u8 + 1,
            nodes,
        };
        bed.build().inspect_err(|_| drop_named(pid, nodes))?;
        Ok(bed)
    }

    fn build(&self) -> Result<(), String> {
        let bridge = self.bridge();
        ip(&["link", "add", &bridge, "type", "bridge"])?;
        ip(&[
            "addr",
            "add",
            &format!("{}/24", self.address(CLIENT_HOST_OCTET)),
            "dev",
            &bridge,
        ])?;
        ip(&["link", "set", &bridge, "up"])?;
        for i in 1..=self.nodes {
            let ns = self.namespace(i);
            let (outside, inside) = (
                format!("plv{}-{i}", self.pid),
                format!("plp{}-{i}", self.pid),
            );
            ip(&["netns", "add", &ns])?;
            ip(&[
                "link", "add", &outside, "type", "veth", "peer", "name", &inside,
            ])?;
            ip(&["link", "set", &inside, "netns", &ns])?;
            ip(&["link", "set", &outside, "master", &bridge])?;
            ip(&["link", "set", &outside, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &ns, "link", "set", &inside, "name", "eth0"])?;
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", self.host(i)),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
        }
        Ok(())
    }

    /// Where node `i` (1-based) runs: its namespace and its address.
    pub fn place(&self, i: usize) -> Option<(String, String)> {
        Some((self.namespace(i), self.host(i)))
    }

    pub fn namespace(&self, i: usize) -> String {
        format!("{NAME_PREFIX}{}-{i}", self.pid)
    }

    /// Node `i`'s address.
    pub fn host(&self, i: usize) -> String {
        self.address(i as u8)
    }

    fn address(&self, last: u8) -> String {
        format!("{SUBNET_PREFIX}.{}.{last}", self.subnet)
    }

    fn bridge(&self) -> String {
        format!("plbr{}", self.pid)
    }

    /// Node `from` can no longer send to node `to` (a one-way partition).
    pub fn block_one_way(&self, from: usize, to: usize) -> Result<(), String> {
        let rule = format!("ip daddr {} drop", self.host(to));
        self.add_rule(from, "output", &rule)
    }

    /// Nodes `a` and `b` can no longer reach each other in either
    /// direction.
    pub fn block(&self, a: usize, b: usize) -> Result<(), String> {
        self.block_one_way(a, b)?;
        self.add_rule(a, "input", &format!("ip saddr {} drop", self.host(b)))
    }

    /// Node `i` loses every packet from and to anyone, clients included.
    pub fn isolate(&self, i: usize) -> Result<(), String> {
        self.add_rule(i, "input", "iifname != \"lo\" drop")?;
        self.add_rule(i, "output", "oifname != \"lo\" drop")
    }

    /// Node `i` drops `percent`% of the packets it receives, at random.
    pub fn lose_packets(&self, i: usize, percent: u8) -> Result<(), String> {
        self.add_rule(
            i,
            "input",
            &format!("iifname != \"lo\" numgen random mod 100 < {percent} drop"),
        )
    }

    /// Removes every fault rule of node `i`.
    pub fn heal(&self, i: usize) -> Result<(), String> {
        let ns = self.namespace(i);
        let listed = nft(&ns, &format!("list table inet {NFT_TABLE}"));
        if listed.is_err() {
            return Ok(()); // no fault was ever set on it
        }
        nft(&ns, &format!("delete table inet {NFT_TABLE}"))
    }

    /// Removes every fault rule of every node.
    pub fn heal_all(&self) -> Result<(), String> {
        (1..=self.nodes).try_for_each(|i| self.heal(i))
    }

    fn add_rule(&self, i: usize, chain: &str, rule: &str) -> Result<(), String> {
        let ns = self.namespace(i);
        // Idempotent: `add` of an existing table or chain is a no-op.
        nft(&ns, &format!("add table inet {NFT_TABLE}"))?;
        nft(
            &ns,
            &format!(
                "add chain inet {NFT_TABLE} {chain} {{ type filter hook {chain} priority 0 ; }}"
            ),
        )?;
        nft(&ns, &format!("add rule inet {NFT_TABLE} {chain} {rule}"))
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        drop_named(self.pid, self.nodes);
    }
}

fn drop_named(pid: u32, nodes: usize) {
    for i in 1..=nodes {
        let _ = ip(&["netns", "del", &format!("{NAME_PREFIX}{pid}-{i}")]);
    }
    let _ = ip(&["link", "del", &format!("plbr{pid}")]);
}

/// Removes the namespaces and bridges of earlier runs whose process is
/// gone (a test killed before its `Drop` ran).
fn remove_leftovers() {
    let Ok(listed) = ip(&["netns", "list"]) else {
        return;
    };
    for line in listed.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix(NAME_PREFIX) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists()) {
            let _ = ip(&["netns", "del", name]);
            let _ = ip(&["link", "del", &format!("plbr{}", pid.unwrap())]);
        }
    }
}

fn ip(args: &[&str]) -> Result<String, String> {
    let out = run_command(Command::new("ip").args(args), None, COMMAND_TIMEOUT);
    if out.success() {
        Ok(out.stdout)
    } else {
        Err(format!("ip {}: {}", args.join(" "), out.stderr.trim()))
    }
}

fn nft(ns: &str, command: &str) -> Result<(), String> {
    let out = run_command(
        Command::new("ip").args(["netns", "exec", ns, "nft", command]),
        None,
        COMMAND_TIMEOUT,
    );
    if out.success() {
        Ok(())
    } else {
        Err(format!("nft in {ns}: {command}: {}", out.stderr.trim()))
    }
}
