"""The fault suite's checker: proves from a run's histories that nothing
acknowledged was lost and nothing was duplicated or rewritten.

  checker.py HISTORY_DIR

HISTORY_DIR holds the JSON-lines files tests/faults/workload.py and
tests/faults/FaultProducer.java write:
  produce-*.jsonl  every producer's outcomes: {"id", "p", "o"} when
                   acknowledged, {"id", "err", "fatal"} when failed;
  read-*.jsonl     what the live readers saw during the run: {"p", "o", "id"};
  group-*.jsonl    the acknowledged commits of a group member:
                   {"commit": {"P": OFFSET}, "group": GROUP};
  watch-*.jsonl    the committed offsets the coordinator answered:
                   {"committed": {"P": OFFSET}, "group": GROUP};
  final.jsonl      every record of every partition after healing, read from
                   offset 0 to the high watermark, then {"end", "read_to"}
                   and one {"final_committed", "group"} per group;
                   (offsets of each group are checked against that group's
                   own; lines without "group" belong to one unnamed group)
  batches.jsonl    (optional) every batch of the final log, from the data
                   directory: {"p", "base", "last", "pid", "epoch", "seq"};
  txn-*.jsonl      (optional) the transactional processor's transactions:
                   {"txn", "sent"}, then {"txn", "outcome"};
  txn-final.jsonl  (with them) the processor's output read with
                   read_committed after healing, {"p", "o", "v"} with v
                   "TXN|P:O|ID", the {"lso", "hw"} it waited for, and the
                   processor group's final {"txn_committed"} offsets.

It checks:
  lost        an acknowledged record is not at its acknowledged offset in
              the final log (and nowhere else either);
  moved       an acknowledged record is in the final log, but at another
              offset than the one acknowledged;
  duplicated  a record (unique id, idempotent producers) is in the final
              log more than once, and the broker could have known: the
              copies were written under one producer id and epoch. Copies
              under different epochs of one producer are a resend after
              the client bumped its epoch, which no broker can deduplicate
              (librdkafka resends unacknowledged messages after a bump, its
              issue #4953; Kafka behaves the same): they are counted as
              "resent_after_epoch_bump", not a violation. Without
              batches.jsonl every duplicate is a violation;
  phantom     the final log holds a record no producer sent;
  gaps        the final log's offsets are not dense from 0 to the high
              watermark, or the final read did not reach it;
  reordered   a live reader saw a partition's offsets other than one after
              another, increasing;
  vanished    a live reader saw a record at an offset that the final log
              holds something else at (or nothing): it was exposed, then
              lost;
  backwards   committed group offsets went back, in the member's
              acknowledged commits, in what the coordinator answered over
              time, or finally (below the last acknowledged commit);
  fatal       a producer got a fatal error (an idempotence violation the
              broker reported);
and, for the share group (share-*.jsonl, tests/faults/FaultShareConsumer.java:
{"share": "rec", "p", "o", "id", "dc", "t"} per delivery, {"share":
"committed", "acks": [[p, o], ...], "t"} when commitSync returned clean for
them, {"share": "commit_failed", ...} otherwise):
  share_lost        a record of the final log was never delivered to the
                    share group (it reads from offset 0 and drains after
                    healing);
  share_redelivered a record was delivered again after the commitSync that
                    accepted it returned (accepted more than once);
  share_vanished    a record delivered is not the one the final log holds
                    at its offset;
  share_over_limit  a record was delivered more often than the delivery
                    count limit (it must be archived at it);
and, for the transactional processor:
  aborted_read    a read_committed read returned a record of a transaction
                  the processor aborted;
  torn            a transaction's records were read in part: not as many as
                  it sent (whatever its outcome, it is all or nothing);
  processed_twice an input record is in the committed output more than once
                  (exactly-once broken);
  unprocessed     an input record below the group's final committed offset
                  is not in the committed output;
  lso_stuck       after healing and the processor's stop, a partition's last
                  stable offset did not reach its high watermark within the
                  transaction timeout and the abort interval.

It prints one line per violation (at most LIMIT per kind), then a summary
JSON line, and exits 1 if anything was violated, 0 otherwise.
"""

import glob
import json
import os
import sys
from collections import defaultdict

LIMIT = 20
KINDS = ["lost", "moved", "duplicated", "phantom", "gaps", "reordered",
         "vanished", "backwards", "fatal", "aborted_read", "torn",
         "processed_twice", "unprocessed", "lso_stuck", "share_lost",
         "share_redelivered", "share_vanished", "share_over_limit"]
# group.share.delivery.count.limit: the fault suite keeps Kafka's default.
SHARE_DELIVERY_COUNT_LIMIT = 5


def load_batches(directory):
    """{partition: sorted [(base, last, pid, epoch, seq)]}, or None."""
    path = os.path.join(directory, "batches.jsonl")
    if not os.path.exists(path):
        return None
    out = defaultdict(list)
    for e in lines(path):
        out[e["p"]].append((e["base"], e["last"], e["pid"], e["epoch"], e["seq"]))
    for p in out:
        out[p].sort()
    return out


def batch_at(batches, p, o):
    """(pid, epoch, first sequence) of the batch holding offset o of p."""
    if batches is None:
        return None
    for base, last, pid, epoch, seq in batches.get(p, []):
        if base <= o <= last:
            return (pid, epoch, seq)
    return None


def lines(path):
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except ValueError:
                # The last line of a killed writer may be torn; any other
                # malformed line is a harness bug worth seeing.
                print("note: %s:%d is not JSON (a torn last line?)" % (path, n))


def ranges(offsets):
    """'[a-b, c, ...]' of sorted offsets, at most eight ranges."""
    out = []
    for o in offsets:
        if out and out[-1][1] == o - 1:
            out[-1][1] = o
        else:
            out.append([o, o])
    shown = ["%d" % a if a == b else "%d-%d" % (a, b) for a, b in out[:8]]
    return "[" + ", ".join(shown) + (", ..." if len(out) > 8 else "") + "]"


def files(directory, pattern):
    return sorted(glob.glob(os.path.join(directory, pattern)))


class Report:
    def __init__(self):
        self.counts = {k: 0 for k in KINDS}

    def violation(self, kind, message):
        self.counts[kind] += 1
        if self.counts[kind] <= LIMIT:
            print("%s: %s" % (kind.upper(), message))

    def ok(self):
        return not any(self.counts.values())


def check(directory):
    report = Report()
    final_path = os.path.join(directory, "final.jsonl")
    if not os.path.exists(final_path):
        sys.exit("checker: %s has no final.jsonl: the run did not finish its final read"
                 % directory)

    # The final log.
    at = {}                      # (p, o) -> id
    where = defaultdict(list)    # id -> [(p, o)]
    ends, read_to, final_committed = {}, {}, {}
    for e in lines(final_path):
        if "end" in e:
            ends = {int(p): h for p, h in e["end"].items()}
            read_to = {int(p): o for p, o in e["read_to"].items()}
        elif "final_committed" in e:
            final_committed[e.get("group")] = {
                int(p): o for p, o in e["final_committed"].items()}
        else:
            at[(e["p"], e["o"])] = e["id"]
            where[e["id"]].append((e["p"], e["o"]))
    for p, high in sorted(ends.items()):
        if read_to.get(p, 0) < high:
            report.violation("gaps", "partition %d: the final read stopped at %d of %d"
                             % (p, read_to.get(p, 0), high))
        offsets = sorted(o for (q, o) in at if q == p)
        if offsets != list(range(len(offsets))):
            missing = sorted(set(range(high)) - set(offsets))[:10]
            report.violation("gaps", "partition %d: offsets are not dense from 0 "
                             "(first missing: %s)" % (p, missing))

    # Producers.
    sent = set()
    acknowledged = failed = without_offset = 0
    for path in files(directory, "produce-*.jsonl"):
        for e in lines(path):
            sent.add(e["id"])
            if "err" in e:
                failed += 1
                if e.get("fatal"):
                    report.violation("fatal", "%s: %s got fatal %s" % (
                        os.path.basename(path), e["id"], e["err"]))
                continue
            acknowledged += 1
            if e["o"] is None or e["o"] < 0:
                # librdkafka reports a message as delivered without an
                # offset when a later batch's success proves it persisted
                # (a retry of a timed-out request, for instance): it must
                # still be in the log, somewhere in its partition.
                without_offset += 1
                if not any(p == e["p"] for (p, _) in where.get(e["id"], [])):
                    report.violation("lost", "%s acknowledged without an offset in "
                                     "partition %s is not in the final log"
                                     % (e["id"], e["p"]))
                continue
            key = (e["p"], e["o"])
            if at.get(key) == e["id"]:
                continue
            if e["id"] in where:
                report.violation("moved", "%s acknowledged at %d@%d, found at %s" % (
                    e["id"], e["p"], e["o"], where[e["id"]]))
            else:
                report.violation("lost", "%s acknowledged at partition %d offset %d; "
                                 "the final log has %r there" % (
                                     e["id"], e["p"], e["o"], at.get(key)))
    batches = load_batches(directory)
    resent = 0
    for rid, places in where.items():
        if len(places) > 1:
            writers = [batch_at(batches, p, o) for (p, o) in places]
            known = all(w is not None for w in writers)
            one_producer = known and len({w[0] for w in writers}) == 1
            epochs = {w[1] for w in writers} if known else set()
            if one_producer and len(epochs) == len(writers):
                resent += 1
            else:
                report.violation("duplicated", "%s is in the log %d times: %s "
                                 "(producer id, epoch, first sequence of each batch: %s)" % (
                                     rid, len(places), places, writers))
        if rid not in sent:
            report.violation("phantom", "%s at %s was never sent" % (rid, places))

    # Live readers.
    live = 0
    for path in files(directory, "read-*.jsonl"):
        last = {}
        for e in lines(path):
            if "p" not in e:
                continue
            live += 1
            p, o = e["p"], e["o"]
            expected = last.get(p, -1) + 1
            if o != expected:
                report.violation("reordered", "%s: partition %d went from %d to %d" % (
                    os.path.basename(path), p, last.get(p, -1), o))
            last[p] = o
            if at.get((p, o)) != e["id"]:
                report.violation("vanished", "%s: saw %s at %d@%d, the final log has %r" % (
                    os.path.basename(path), e["id"], p, o, at.get((p, o))))

    # Group offsets, each group on its own.
    acked_max = defaultdict(dict)  # group -> {p: highest acknowledged commit}
    for path in files(directory, "group-*.jsonl"):
        last = {}
        for e in lines(path):
            group = e.get("group")
            for p, o in e.get("commit", {}).items():
                p = int(p)
                if o < last.get((group, p), -1):
                    report.violation("backwards", "%s: commit of partition %d went %d -> %d"
                                     % (os.path.basename(path), p, last[(group, p)], o))
                last[(group, p)] = o
                acked_max[group][p] = max(acked_max[group].get(p, -1), o)
    for path in files(directory, "watch-*.jsonl"):
        last = {}
        for e in lines(path):
            group = e.get("group")
            for p, o in e.get("committed", {}).items():
                p = int(p)
                if o < last.get((group, p), -1):
                    report.violation("backwards", "%s: committed offset of partition %d "
                                     "answered %d, then %d" % (
                                         os.path.basename(path), p, last[(group, p)], o))
                last[(group, p)] = o
    for group, acked in sorted(acked_max.items(), key=lambda kv: str(kv[0])):
        final = final_committed.get(group, {})
        for p, o in sorted(acked.items()):
            if final.get(p, -1) < o:
                report.violation("backwards", "group %s, partition %d: commit %d was "
                                 "acknowledged, the final committed offset is %s"
                                 % (group, p, o, final.get(p)))

    txn_summary = check_transactions(directory, report)
    share_summary = check_share(directory, report, at)

    summary = dict(report.counts)
    summary.update(txn_summary)
    summary.update(share_summary)
    summary.update({
        "resent_after_epoch_bump": resent,
        "acknowledged": acknowledged,
        "acknowledged_without_offset": without_offset,
        "failed": failed,
        "final_records": len(at),
        "live_reads": live,
        "commits_checked": sum(len(a) for a in acked_max.values()),
        "groups_checked": len([a for a in acked_max.values() if a]),
        "ok": report.ok(),
    })
    print(json.dumps(summary, sort_keys=True))
    return report.ok()


def check_share(directory, report, at):
    """The share group's checks against the final log `at`; its counts."""
    histories = files(directory, "share-*.jsonl")
    if not histories:
        return {}
    deliveries = defaultdict(list)   # (p, o) -> [(t, id, dc)]
    accepted_at = {}                 # (p, o) -> when its commitSync returned
    for path in histories:
        for e in lines(path):
            kind = e.get("share")
            if kind == "rec":
                deliveries[(e["p"], e["o"])].append((e["t"], e["id"], e["dc"]))
            elif kind == "committed":
                for p, o in e["acks"]:
                    accepted_at.setdefault((p, o), e["t"])
    for (p, o), seen in sorted(deliveries.items()):
        for t, rid, dc in seen:
            if at.get((p, o)) != rid:
                report.violation("share_vanished", "%s delivered at %d@%d, the final log "
                                 "has %r" % (rid, p, o, at.get((p, o))))
            if dc > SHARE_DELIVERY_COUNT_LIMIT:
                report.violation("share_over_limit", "%d@%d delivered with delivery count "
                                 "%d" % (p, o, dc))
        accepted = accepted_at.get((p, o))
        if accepted is not None:
            later = [t for t, _, _ in seen if t > accepted]
            if later:
                report.violation("share_redelivered", "%d@%d was accepted (commitSync "
                                 "returned at %d) and delivered again at %s"
                                 % (p, o, accepted, later))
    lost = defaultdict(list)         # p -> [offsets never delivered]
    for (p, o), rid in sorted(at.items()):
        if (p, o) not in deliveries:
            report.violation("share_lost", "%s at %d@%d never reached the share group"
                             % (rid, p, o))
            lost[p].append(o)
    if lost:
        # A stalled share partition loses a whole tail, far more than the
        # violations printed: say which partitions, which offsets, and when
        # each partition last delivered, relative to the member's start.
        start = min((t for seen in deliveries.values() for t, _, _ in seen), default=0)
        for p in sorted({p for p, _ in at}):
            last = max((seen[-1][0] for (q, _), seen in deliveries.items() if q == p),
                       default=None)
            print("share partition %d: %d records, %d never delivered %s; last delivery %s"
                  % (p, len([1 for q, _ in at if q == p]), len(lost.get(p, [])),
                     ranges(lost.get(p, [])),
                     "at +%.1f s" % ((last - start) / 1000) if last is not None else "never"))
    return {
        "share_delivered": len(deliveries),
        "share_accepted": len(accepted_at),
        "share_redeliveries": sum(len(v) - 1 for v in deliveries.values()),
    }


def check_transactions(directory, report):
    """The transactional processor's checks; its counts for the summary."""
    final_path = os.path.join(directory, "txn-final.jsonl")
    histories = files(directory, "txn-*.jsonl")
    histories = [h for h in histories if os.path.basename(h) != "txn-final.jsonl"]
    if not histories:
        return {}
    if not os.path.exists(final_path):
        sys.exit("checker: %s has transactions but no txn-final.jsonl" % directory)
    sent, outcome = {}, {}
    for path in histories:
        for e in lines(path):
            if "sent" in e:
                sent[e["txn"]] = e["sent"]
            if "outcome" in e:
                outcome[e["txn"]] = e["outcome"]
    read = defaultdict(int)          # txn -> records read
    inputs = defaultdict(list)       # (p, o) of an input -> txns that carry it
    txn_committed = {}
    for e in lines(final_path):
        if "lso" in e:
            for p, lso in e["lso"].items():
                if lso != e["hw"].get(p):
                    report.violation("lso_stuck", "output partition %s: LSO %d, high "
                                     "watermark %d" % (p, lso, e["hw"].get(p)))
        elif "txn_committed" in e:
            txn_committed = {int(p): o for p, o in e["txn_committed"].items()}
        elif "v" in e:
            txn, source, _ = e["v"].split("|", 2)
            p, o = source.split(":")
            read[txn] += 1
            inputs[(int(p), int(o))].append(txn)
            if outcome.get(txn) == "aborted":
                report.violation("aborted_read", "%s of aborted transaction %s was read "
                                 "at %d@%d" % (e["v"], txn, e["p"], e["o"]))
    for txn, n in sorted(read.items()):
        if n != sent.get(txn):
            report.violation("torn", "transaction %s sent %s records, %d were read"
                             % (txn, sent.get(txn), n))
    for (p, o), txns in sorted(inputs.items()):
        if len(txns) > 1:
            report.violation("processed_twice", "input %d@%d is in transactions %s"
                             % (o, p, txns))
    for p, upto in sorted(txn_committed.items()):
        for o in range(upto):
            if (p, o) not in inputs:
                report.violation("unprocessed", "input %d@%d is below the committed offset "
                                 "%d but in no committed transaction" % (o, p, upto))
    count = lambda what: sum(1 for v in outcome.values() if v == what)
    return {
        "txn_committed": count("committed"),
        "txn_aborted": count("aborted"),
        "txn_unknown": count("unknown"),
        "txn_inputs_processed": len(inputs),
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(0 if check(sys.argv[1]) else 1)
