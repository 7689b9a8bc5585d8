//! Running the operator CLI (`pinlog topic|group|acl|user|quota ...`) as a
//! user would, and reading what it printed: its exit code, its `--json`
//! document, the rows of its tables.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::{run_command, CmdOutput, PINLOG_BIN};

/// Bound on one CLI run; each makes a handful of requests to a local broker.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `pinlog ARGS` with `stdin`, and no `PINLOG_*` variable from the
/// caller's environment (which would change its defaults).
pub fn run_pinlog(args: &[&str], stdin: Option<&[u8]>) -> CmdOutput {
    let mut cmd = Command::new(PINLOG_BIN);
    cmd.args(args);
    for (var, _) in std::env::vars_os() {
        if var.to_string_lossy().starts_with("PINLOG_") {
            cmd.env_remove(var);
        }
    }
    run_command(&mut cmd, stdin, COMMAND_TIMEOUT)
}

pub fn exit_code(out: &CmdOutput) -> i32 {
    out.status
        .and_then(|s| s.code())
        .unwrap_or_else(|| panic!("no exit code:\n{out}"))
}

pub fn expect_exit(out: &CmdOutput, code: i32) -> &CmdOutput {
    assert_eq!(exit_code(out), code, "{out}");
    out
}

/// The JSON document of a run that succeeded.
pub fn json(out: &CmdOutput) -> Value {
    expect_exit(out, 0);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// The cells of each table line after the header, split on runs of spaces.
pub fn table_rows(text: &str, header_starts: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(header_starts));
    lines
        .next()
        .unwrap_or_else(|| panic!("no {header_starts} table in:\n{text}"));
    lines
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}
