//! The workspace's structure, checked: no import cycle between the
//! top-level modules of any crate, no source file over [`CODE_LINES_MAX`]
//! code lines outside its tests, and no I/O runtime below the broker shell
//! (issue: structure). The layers this keeps are described in
//! ARCHITECTURE.md ("Layers"); Cargo already refuses an import from a
//! lower crate into a higher one, and this test catches what Cargo cannot:
//! a cycle inside one crate, and a lower crate that gains glommio.
//!
//! Imports are read as text: every `crate::<module>` path, and every module
//! named in a `crate::{...}` group, outside comments and `#[cfg(test)]`
//! modules (a test may reach anywhere).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Code lines (not blank, not comments) a file may have outside its tests.
const CODE_LINES_MAX: usize = 1000;

/// The workspace's crates, by directory, bottom layer first.
const CRATES: &[&str] = &["protocol", "core", ".", "loadgen", "powerfs"];

/// The broker shell's own top-level modules, by layer, bottom first: a
/// module imports only from its own layer or below (and from the crates
/// below the shell). Cycles are caught anyway; this also keeps a lower
/// module from reaching up without closing one.
const SHELL_LAYERS: &[&[&str]] = &[
    &[
        "error",
        "cgroup",
        "memory",
        "blocking_pool",
        "security",
        "ticks",
    ],
    &["log"],
    &["shard"],
    &["node"],
    &["group", "quorum"],
    &["server"],
    &["cli", "tools", "demo"],
];

/// The rooms of `src/server/`, by layer, bottom first: a room imports only
/// rooms below it. The controller room forwards and decides admin requests;
/// replication proposes ISR changes through it; the transaction
/// coordinator allocates producer ids through the controller and sends
/// markers over replication's peer connections; the image applier starts
/// fetchers and coordinators; shard moves adopt a partition through the applier; handlers
/// call all of these; the network edge dispatches to handlers; metrics read
/// everything at scrape time; the lifecycle starts and stops it all.
const SERVER_ROOMS: &[&str] = &[
    "controller",
    "replication",
    "txn_coordinator",
    "share_state",
    "share_partitions",
    "image_applier",
    "shard_placement",
    "handlers",
    "network",
    "metrics",
    "lifecycle",
];

/// Imports the layers allow but the design does not: storage knows nothing
/// of the Kafka wire protocol (ARCHITECTURE.md, invariants).
const FORBIDDEN_IMPORTS: &[(&str, &str)] = &[("log", "protocol")];

/// What each crate below the broker shell may depend on. These crates are
/// pure: a new dependency goes here only if it does no I/O and needs no
/// runtime (an executor, a socket, a file), so that the decisions they hold
/// stay testable without one.
const PURE_CRATE_DEPENDENCIES: &[(&str, &[&str])] = &[
    ("protocol", &["bytes", "thiserror"]),
    (
        "core",
        &[
            "pinlog-protocol",
            "bytes",
            "crc32c",
            "futures-channel",
            "serde",
            "toml",
            "tracing",
            // SASL's crypto (sasl/): pure functions of their inputs; the
            // core never calls ring's SystemRandom.
            "ring",
            "base64",
            "serde_json",
            // ssl.principal.mapping.rules: matching only.
            "regex",
        ],
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of a file up to its inline `#[cfg(test)] mod tests { ... }`,
/// comments left out. A test-only module declared in its own file
/// (`#[cfg(test)] mod x;`) does not end the file's code.
fn code_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| {
            w[0].trim() == "#[cfg(test)]" && {
                let next = w[1].trim();
                (next.starts_with("mod ") || next.starts_with("pub mod ")) && next.ends_with('{')
            }
        })
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .copied()
        .filter(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with("//")
        })
        .collect()
}

/// The top-level modules `code` names after `crate::`.
fn imported_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        // Not part of a longer name (`my_crate::`).
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // The first segment of each path at the group's own level;
            // nested groups (`protocol::{a, b}`) name items, not modules.
            let mut depth = 0;
            let mut at_item_start = true;
            let mut name = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => at_item_start = true,
                    c if depth == 0 && at_item_start => {
                        if c.is_alphanumeric() || c == '_' {
                            name.push(c);
                        } else if !name.is_empty() {
                            out.insert(std::mem::take(&mut name));
                            at_item_start = false;
                        }
                    }
                    _ => {}
                }
            }
            if !name.is_empty() {
                out.insert(name);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

struct Crate {
    /// Top-level module to the modules of this crate it imports.
    imports: BTreeMap<String, BTreeSet<String>>,
    /// Top-level module to every top-level name it imports through
    /// `crate::`, including the lower crates' modules the crate re-exports.
    named: BTreeMap<String, BTreeSet<String>>,
    /// File (relative to the repository) to its code lines.
    sizes: BTreeMap<String, usize>,
}

fn read_crate(dir: &str) -> Crate {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join(dir).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let module_of = |path: &Path| -> String {
        let first = path
            .strip_prefix(&src)
            .expect("under src/")
            .components()
            .next()
            .expect("a path component");
        let name = first.as_os_str().to_string_lossy();
        name.strip_suffix(".rs").unwrap_or(&name).to_string()
    };
    let modules: BTreeSet<String> = files
        .iter()
        .map(|p| module_of(p))
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut all_named: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut sizes = BTreeMap::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read a source file");
        let code = code_lines(&text);
        let rel = path
            .strip_prefix(root)
            .expect("under the repository")
            .components()
            .filter(|c| c.as_os_str() != ".")
            .collect::<PathBuf>()
            .to_string_lossy()
            .to_string();
        sizes.insert(rel, code.len());
        let module = module_of(path);
        if !modules.contains(&module) {
            continue;
        }
        let named = imported_modules(&code.join("\n"));
        all_named
            .entry(module.clone())
            .or_default()
            .extend(named.iter().filter(|m| **m != module).cloned());
        imports.entry(module.clone()).or_default().extend(
            named
                .into_iter()
                .filter(|m| modules.contains(m) && *m != module),
        );
    }
    Crate {
        imports,
        named: all_named,
        sizes,
    }
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        w.on_stack.insert(v);
        for u in w.graph.get(v).into_iter().flatten() {
            let u = u.as_str();
            if !w.index.contains_key(u) {
                visit(w, u);
                let l = w.low[u].min(w.low[v]);
                w.low.insert(v, l);
            } else if w.on_stack.contains(u) {
                let l = w.index[u].min(w.low[v]);
                w.low.insert(v, l);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack.remove(u);
                component.push(u.to_string());
                if u == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.found.push(component);
            }
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.found
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    for dir in CRATES {
        no_import_cycle_in(dir);
    }
}

fn no_import_cycle_in(dir: &str) {
    let krate = read_crate(dir);
    let found = cycles(&krate.imports);
    let described: Vec<String> = found
        .iter()
        .map(|c| {
            let edges: Vec<String> = c
                .iter()
                .flat_map(|m| {
                    krate.imports[m]
                        .iter()
                        .filter(|t| c.contains(t))
                        .map(move |t| format!("{m} -> {t}"))
                })
                .collect();
            format!("{} ({})", c.join(", "), edges.join("; "))
        })
        .collect();
    assert!(
        found.is_empty(),
        "import cycles between top-level modules of {dir}/src/: {described:#?}\n\
         Move the item a lower module takes from a higher one down (see ARCHITECTURE.md, Layers)."
    );
}

#[test]
fn the_check_finds_a_cycle_and_reads_grouped_imports() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(m, ts)| (m.to_string(), ts.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(cycles(&graph), vec![vec!["a", "b", "c"]]);
    let named = imported_modules(
        "use crate::{log::x, protocol::{a, b}};\nlet y = crate::shard::now(); my_crate::z();",
    );
    assert_eq!(
        named.into_iter().collect::<Vec<_>>(),
        ["log", "protocol", "shard"]
    );
    let code =
        code_lines("use crate::a;\n// crate::b\n#[cfg(test)]\nmod tests {\nuse crate::c;\n}");
    assert_eq!(code, ["use crate::a;"]);
    let code = code_lines("#[cfg(test)]\nmod support;\nuse crate::d;");
    assert_eq!(code, ["#[cfg(test)]", "mod support;", "use crate::d;"]);
}

#[test]
fn no_source_file_over_the_code_line_limit() {
    let mut problems = Vec::new();
    let sizes = CRATES.iter().flat_map(|dir| read_crate(dir).sizes);
    for (file, lines) in sizes {
        if lines > CODE_LINES_MAX {
            problems.push(format!(
                "{file} has {lines} code lines outside its tests; the limit is {CODE_LINES_MAX}: split it on one of its seams"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_crates_below_the_shell_depend_on_no_io_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (dir, allowed) in PURE_CRATE_DEPENDENCIES {
        let manifest = root.join(dir).join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).expect("read a crate manifest");
        let table: toml::Table = text.parse().expect("a valid Cargo.toml");
        assert!(
            !root.join(dir).join("build.rs").exists()
                && !table["package"]
                    .as_table()
                    .is_some_and(|p| p.contains_key("build")),
            "{dir}/ has a build script: a pure crate builds from its sources alone"
        );
        // [dependencies], [build-dependencies] and every target's tables.
        let mut tables = vec![table.get("dependencies"), table.get("build-dependencies")];
        if let Some(targets) = table.get("target").and_then(|t| t.as_table()) {
            for target in targets.values() {
                tables.push(target.get("dependencies"));
                tables.push(target.get("build-dependencies"));
            }
        }
        let unexpected: Vec<&String> = tables
            .into_iter()
            .flatten()
            .filter_map(|d| d.as_table())
            .flat_map(|d| d.keys())
            .filter(|name| !allowed.contains(&name.as_str()))
            .collect();
        assert!(
            unexpected.is_empty(),
            "{dir}/Cargo.toml depends on {unexpected:?}, which this test does not know \
             to be free of I/O. The crate holds pure decisions (ARCHITECTURE.md, Layers): \
             keep I/O in the broker shell, or, if the crate does no I/O, add it to \
             PURE_CRATE_DEPENDENCIES in tests/in_process/module_layers.rs."
        );
    }
}

#[test]
fn the_shell_imports_only_downwards() {
    let krate = read_crate(".");
    let layer_of = |module: &str| SHELL_LAYERS.iter().position(|l| l.contains(&module));
    let mut problems = Vec::new();
    for (module, named) in &krate.named {
        let Some(own) = layer_of(module) else {
            if krate.imports.contains_key(module) && !["lib", "main"].contains(&module.as_str()) {
                problems.push(format!(
                    "src/{module} is in no layer: add it to SHELL_LAYERS"
                ));
            }
            continue;
        };
        for target in named {
            if layer_of(target).is_some_and(|theirs| theirs > own) {
                problems.push(format!("{module} imports {target}, a higher layer"));
            }
            if FORBIDDEN_IMPORTS.contains(&(module.as_str(), target.as_str())) {
                problems.push(format!(
                    "{module} imports {target}, which the design forbids"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{problems:#?}\nSee ARCHITECTURE.md, Layers: move the item down, or pass it in."
    );
}

#[test]
fn the_server_rooms_import_only_downwards() {
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server");
    let mut files = Vec::new();
    rust_files(&server, &mut files);
    let mut problems = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&server).expect("under src/server/");
        if rel == Path::new("mod.rs") {
            continue;
        }
        let mut parts = rel.components();
        let (Some(first), Some(_)) = (parts.next(), parts.next()) else {
            problems.push(format!(
                "src/server/{} is outside the rooms: put it in one of {SERVER_ROOMS:?}",
                rel.display()
            ));
            continue;
        };
        let room = first.as_os_str().to_string_lossy().to_string();
        let Some(own) = SERVER_ROOMS.iter().position(|r| *r == room) else {
            problems.push(format!(
                "src/server/{room}/ is in no layer: add it to SERVER_ROOMS"
            ));
            continue;
        };
        let text = std::fs::read_to_string(&path).expect("read a source file");
        let code = code_lines(&text).join("\n");
        for unreadable in ["super::super::", "crate::server::*", "use crate::server;"] {
            if code.contains(unreadable) {
                problems.push(format!(
                    "src/server/{} names a room through `{unreadable}`, which this check \
                     cannot follow: write `crate::server::<room>::...`",
                    rel.display()
                ));
            }
        }
        // `crate::server::x` read as `crate::x`, so the import reader finds
        // the rooms (and room groups) a file names.
        let code = code.replace("crate::server::", "crate::");
        for target in imported_modules(&code) {
            if let Some(theirs) = SERVER_ROOMS.iter().position(|r| *r == target) {
                if theirs > own {
                    problems.push(format!(
                        "src/server/{} imports the {target} room, above {room}",
                        rel.display()
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{problems:#?}\nSee ARCHITECTURE.md, Layers: move the item down, or pass it in."
    );
}

/// The shell reaches the lower crates through the names `src/lib.rs`
/// re-exports (`crate::protocol`, `crate::controller`, ...), which the
/// checks above read; a direct `pinlog_core::` path would slip past them.
/// Only the re-exporting files name the crates.
#[test]
fn the_shell_names_the_lower_crates_only_where_it_re_exports_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let reexporters = ["src/lib.rs", "src/group/mod.rs", "src/shard/mod.rs"];
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut problems = Vec::new();
    for path in files {
        let rel = path.strip_prefix(root).expect("under the repository");
        if reexporters.iter().any(|r| Path::new(r) == rel) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read a source file");
        let code = code_lines(&text).join("\n");
        for name in ["pinlog_core::", "pinlog_protocol::"] {
            if code.contains(name) {
                problems.push(format!(
                    "{} names {name} directly: use the crate:: path src/lib.rs re-exports",
                    rel.display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
