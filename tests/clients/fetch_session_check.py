"""kafka-python (3.x uses incremental fetch sessions, KIP-227, with Kafka's
FetchSessionHandler rules) through the situations that make it send a full
fetch on an existing session: a dropped connection, a seek, a group
rebalance, and partitions removed and re-added. The Python twin of
tests/clients/java/FetchSessionCheck.java, driven by tests/broker/clients.rs:

    fetch_session_check.py BOOTSTRAP TOPIC PARTITIONS CUT_REQUEST_FILE CUT_DONE_FILE

It creates TOPIC, runs the phases in order and prints `phase NAME ok` after
each; for the cut it creates CUT_REQUEST_FILE and keeps polling until the
test has cut every connection and created CUT_DONE_FILE. Every wait is
bounded (STEP_S); on failure it prints ERROR and exits 1.
"""

import os
import sys
import threading
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

STEP_S = 60
RECORDS_PER_PHASE = 400
POLL_MS = 100


def die(msg):
    print(f"ERROR {msg}", flush=True)
    sys.exit(1)


def wait_for(what, check, pause_s=0.0):
    """Calls check until it holds. A check that polls a consumer must run
    back to back (pause_s 0): a pause between a consumer's polls is the gap
    in which kafka-python drops a finished join (see Pollers)."""
    deadline = time.monotonic() + STEP_S
    while not check():
        if time.monotonic() > deadline:
            die(f"timed out after {STEP_S} s waiting for {what}")
        time.sleep(pause_s)


def values(phase):
    return {f"{phase}-{i}" for i in range(RECORDS_PER_PHASE)}


class Pollers:
    """Polls each consumer of a group in a thread of its own, back to back.

    kafka-python runs JoinGroup and SyncGroup on its IO thread, and a poll
    that returns before they finish leaves the join task running. If the
    task completes before that consumer's next poll, the next poll finds it
    done and starts a new join, dropping the assignment (kafka-python
    3.0.12, coordinator/base.py `ensure_active_group`). Polling two group
    members in turn from one thread leaves each one's foreground away for a
    whole poll of the other, so the group leader rejoined after every
    generation and the group never settled. A thread per consumer keeps
    every foreground waiting on its own join, as an application would.
    """

    def __init__(self, consumers):
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._seen = set()
        self._assigned = {id(c): set() for c in consumers}
        self._errors = []
        self._threads = [threading.Thread(target=self._run, args=(c,), daemon=True)
                         for c in consumers]

    def _run(self, consumer):
        try:
            while not self._stop.is_set():
                batch = consumer.poll(timeout_ms=POLL_MS)
                assigned = consumer.assignment()
                with self._lock:
                    for records in batch.values():
                        self._seen.update(r.value.decode() for r in records)
                    self._assigned[id(consumer)] = set(assigned)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            with self._lock:
                self._errors.append(repr(e))

    def __enter__(self):
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=STEP_S)

    def check(self):
        with self._lock:
            if self._errors:
                die(f"a polling consumer failed: {self._errors[0]}")

    def assigned(self, consumer):
        self.check()
        with self._lock:
            return set(self._assigned[id(consumer)])

    def saw_all(self, want):
        self.check()
        with self._lock:
            return want <= self._seen


def main():
    bootstrap, topic, partitions, cut_request, cut_done = sys.argv[1:6]
    partitions = int(partitions)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=STEP_S * 1000)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")

    def produce(phase):
        futures = [
            producer.send(topic, key=f"k{i}".encode(), value=f"{phase}-{i}".encode(),
                          partition=i % partitions)
            for i in range(RECORDS_PER_PHASE)
        ]
        for f in futures:
            f.get(timeout=STEP_S)

    def consumer(group):
        return KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=group is not None)

    def poll_values(c):
        out = set()
        for records in c.poll(timeout_ms=POLL_MS).values():
            out.update(r.value.decode() for r in records)
        return out

    def expect(phase, consumers, want):
        seen = set()

        def done():
            for c in consumers:
                seen.update(poll_values(c) & want)
            return seen == want

        wait_for(f"{phase}: every record", done)
        print(f"phase {phase} ok records={len(seen)}", flush=True)

    a = consumer("fsc-group")
    produce("a")
    a.subscribe([topic])
    expect("subscribe", [a], values("a"))

    # A dropped connection: the next fetch is a full fetch naming the old
    # session (session id, epoch 0).
    open(cut_request, "w").close()
    wait_for("the connections to be cut", lambda: poll_values(a) is not None and os.path.exists(cut_done))
    produce("b")
    expect("connection cut", [a], values("b"))

    a.seek_to_beginning()
    expect("seek", [a], values("a") | values("b"))

    b = consumer("fsc-group")
    b.subscribe([topic])
    with Pollers([a, b]) as pollers:
        wait_for("the second member to get partitions",
                 lambda: bool(pollers.assigned(b)) and len(pollers.assigned(a)) < partitions,
                 pause_s=0.01)
        produce("c")
        wait_for("rebalance join: every record", lambda: pollers.saw_all(values("c")),
                 pause_s=0.01)
    print(f"phase rebalance join ok records={RECORDS_PER_PHASE}", flush=True)
    b.close()

    def all_back():
        poll_values(a)
        return len(a.assignment()) == partitions

    wait_for("the first member to get every partition back", all_back)
    produce("d")
    expect("rebalance leave", [a], values("d"))
    a.close()

    c = consumer(None)
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    c.assign([p0, p1])
    c.seek_to_beginning(p0, p1)
    for _ in range(10):
        c.poll(timeout_ms=POLL_MS)
    c.assign([p0])
    for _ in range(10):
        c.poll(timeout_ms=POLL_MS)
    c.assign([p0, p1])
    c.seek(p1, 0)
    end = c.end_offsets([p1])[p1]
    seen = set()

    def p1_again():
        for tp, records in c.poll(timeout_ms=POLL_MS).items():
            if tp == p1:
                seen.update(r.offset for r in records)
        return len(seen) >= end

    wait_for("every record of partition 1 again", p1_again)
    print(f"phase reassign ok records={len(seen)}", flush=True)
    c.close()
    producer.close()
    print("done", flush=True)


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - report any client failure as a line
        die(repr(e))
