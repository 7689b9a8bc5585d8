"""Helpers shared by the reports of tuning/compare.sh and its replicated
mode (tuning/replicated.sh): reading one run's result files and turning
them into medians, ratios and table cells.

Every run leaves in $RES: NAME.json (the client's JSON), NAME.time (the
client's wall, user and system seconds from /usr/bin/time), NAME.bcpu (the
broker's CPU seconds during the run) and NAME.cmd (the command).
"""
import glob
import json
import os
import re
import statistics

RES = os.environ["RES"]


def load(name):
    try:
        with open(os.path.join(RES, name)) as f:
            t = f.read().strip()
        return json.loads(t) if t else {}
    except (OSError, ValueError):
        return {}


def text(name, default=""):
    try:
        with open(os.path.join(RES, name)) as f:
            return f.read().strip()
    except OSError:
        return default


def timing(name):
    """(wall, user, sys) of the client from /usr/bin/time, or None."""
    t = text(name + ".time").splitlines()
    for line in reversed(t):
        parts = line.split()
        if len(parts) == 3:
            try:
                return tuple(float(x) for x in parts)
            except ValueError:
                pass
    return None


def bcpu(name):
    try:
        return float(text(name + ".bcpu", "nan"))
    except ValueError:
        return float("nan")


def cpu_s_per_gb(name, record_bytes):
    """The broker's (or cluster's) CPU seconds per GB (10^9 bytes) of
    record values the run moved, warm-up included (the CPU figure covers
    it too)."""
    j = load(name + ".json")
    if not j:
        return None
    moved = (j.get("records", 0) + j.get("warmup_records", 0)) * record_bytes
    cpu = bcpu(name)
    if moved <= 0 or cpu != cpu:
        return None
    return cpu / (moved / 1e9)


def mbps(j):
    """MB/s (10^6 bytes) of record values from a loadgen or raw-sink JSON."""
    if not j:
        return None
    if j.get("bytes") and j.get("duration_s"):
        return j["bytes"] / j["duration_s"] / 1e6
    return j.get("mb_per_s")


def lat(j, k):
    v = (j or {}).get("latency_us") or {}
    return v.get(k)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def rng(xs, digits=1):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a"
    if len(xs) == 1:
        return f"{xs[0]:.{digits}f}"
    return f"{med(xs):.{digits}f} ({min(xs):.{digits}f}–{max(xs):.{digits}f})"


def f1(x, unit=""):
    return "n/a" if x is None else f"{x:.1f}{unit}"


def f2(x):
    return "n/a" if x is None else f"{x:.2f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def runs(prefix):
    """{round: name} for files PREFIX.<round>.json"""
    out = {}
    for p in glob.glob(os.path.join(RES, prefix + ".*.json")):
        base = os.path.basename(p)[:-5]
        out[base[len(prefix) + 1:]] = base
    return dict(sorted(out.items()))


def cores(name):
    t = timing(name)
    b = bcpu(name)
    if not t or t[0] <= 0:
        return None, None
    return b / t[0], (t[1] + t[2]) / t[0]


def run_row(label, name):
    j = load(name + ".json")
    bc, cc = cores(name)
    err = j.get("errors", "n/a") if j else "failed"
    return ("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
        label,
        f1(j.get("records_per_s") if j else None),
        f1(mbps(j)),
        f1(lat(j, "p50") / 1000 if lat(j, "p50") is not None else None),
        f1(lat(j, "p99") / 1000 if lat(j, "p99") is not None else None),
        f1(lat(j, "p999") / 1000 if lat(j, "p999") is not None else None),
        f1(lat(j, "max") / 1000 if lat(j, "max") is not None else None),
        err, f2(bc), f2(cc)))


RUN_HDR = ("| run | records/s | MB/s | p50 ms | p99 ms | p99.9 ms | max ms | errors | broker CPU (cores) | client CPU (cores) |\n"
           "|---|---|---|---|---|---|---|---|---|---|")


def pair_ratios(prefix_a, prefix_b, metric):
    ra, rb = runs(prefix_a), runs(prefix_b)
    out = []
    for k in ra:
        if k in rb:
            out.append(ratio(metric(load(ra[k] + ".json")), metric(load(rb[k] + ".json"))))
    return [x for x in out if x is not None]


def met(x, op, target):
    if x is None:
        return "n/a"
    ok = x >= target if op == ">=" else x <= target
    return "yes" if ok else "**no**"


def xr(x, d=2):
    return "n/a" if x is None else f"{x:.{d}f}x"


def commands_lines(argv, prefixes):
    """The report's "Commands" section: the script's command line, then the
    first recorded command of each workload in `prefixes` (as measure()
    wrote it: the work directory as $WORK, repository paths relative)."""
    out = ["## Commands", "", "```sh", f"tuning/compare.sh{(' ' + argv) if argv else ''}", "```", "",
           "The first command of each workload, exactly as run (ports are free ports the script picked; "
           "the Kafka runs are the same with Kafka's address):", "", "```sh"]
    for prefix in prefixes:
        first = next(iter(runs(prefix).values()), None)
        if first:
            out += [f"# {first}", text(first + ".cmd").replace(os.path.dirname(RES), "$WORK")]
    return out + ["```", ""]


def notes_lines(out_path):
    """The report's closing section: the analysis between the notes
    markers of the report at out_path, which a new run keeps (or a
    placeholder for a first report), inside the markers."""
    return ["<!-- notes:begin -->", kept_notes(out_path), "", "<!-- notes:end -->"]


def kept_notes(out_path):
    """The analysis between the notes markers of the report at out_path,
    or a placeholder for a first report."""
    try:
        with open(out_path) as f:
            m = re.search(r"<!-- notes:begin -->\n(.*?)<!-- notes:end -->", f.read(), re.S)
        if m:
            return m.group(1).rstrip("\n")
    except OSError:
        pass
    return ("## Analysis\n\n(Not written yet: the explanation of each missed target goes here; "
            "compare.sh keeps this section.)")


def machine_lines(env):
    """The report's "Machine" section, from the MACH_* variables the
    scripts export."""
    hyp = f" ({env['MACH_HYP']} guest)" if env.get("MACH_HYP") else ""
    return [
        "## Machine",
        "",
        f"- CPU: {env['MACH_CPU']}, {env['MACH_CORES']} cores{hyp}",
        f"- RAM: {env['MACH_RAM']}",
        f"- Kernel: {env['MACH_KERNEL']}",
        f"- Disk: {env['MACH_DISK']}",
        f"- Java: {env['MACH_JAVA']}; Rust: {env['MACH_RUST']}",
        "",
    ]
