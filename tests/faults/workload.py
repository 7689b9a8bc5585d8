"""The fault suite's workload (confluent-kafka), driven by tests/faults.rs.

Every mode appends JSON lines to OUT, one per event, and flushes each line,
so that a history survives the process being killed. Every mode runs
until STOP (a file path) exists or its time limit passes, whichever comes
first; nothing waits forever. tests/faults/checker.py reads the histories.

  workload.py produce BOOTSTRAP TOPIC NAME RATE OUT STOP
      An idempotent acks=all producer (librdkafka's defaults otherwise)
      sending about RATE records a second, each value a unique id
      "NAME-<n>", to partitions of librdkafka's choosing. One line per
      outcome:
        {"id": ..., "p": P, "o": OFFSET}                  acknowledged
        {"id": ..., "err": NAME, "fatal": bool}           failed
      A fatal error ends the producer (after it is logged) and a new one
      takes over, as an application would; the error itself is a line
      {"id": "NAME-fatal-<generation>", "err": NAME, "fatal": true,
      "reason": ...}, which the checker counts as a violation.
  workload.py read BOOTSTRAP TOPIC PARTITIONS OUT STOP
      A reader of every partition from offset 0, no group: one line per
      record, {"p": P, "o": OFFSET, "id": ...}, and {"err": NAME} per
      error the client reports.
  workload.py group BOOTSTRAP TOPIC GROUP OUT STOP [PROTOCOL]
      A consumer-group member that commits synchronously every 50 records:
      {"commit": {"P": OFFSET, ...}, "group": GROUP} after each commit the
      coordinator acknowledged, {"commit_err": NAME} otherwise. PROTOCOL
      is librdkafka's group.protocol: classic (the default) or consumer
      (KIP-848).
  workload.py watch BOOTSTRAP TOPIC PARTITIONS GROUP OUT STOP
      Twice a second, the group's committed offsets as the coordinator
      answers OffsetFetch: {"committed": {"P": OFFSET, ...}, "group": GROUP}.
  workload.py final BOOTSTRAP TOPIC PARTITIONS GROUPS OUT
      After healing: every record of every partition from offset 0 to the
      high watermark, {"p", "o", "id"} lines, then
      {"end": {"P": HW, ...}, "read_to": {"P": NEXT, ...}}, then each
      group's committed offsets once more (GROUPS is a comma-separated
      list), {"final_committed": {...}, "group": GROUP}.
  workload.py txn-final BOOTSTRAP IN OUT_TOPIC PARTITIONS GROUP OUT
      After healing, for tests/faults/TxnProcessor.java's output: first
      waits (at most LSO_WAIT_SECONDS) until every partition's last stable
      offset reaches its high watermark (every transaction ended, those of
      dead producers aborted by their timeout) and writes
      {"lso": {"P": LSO}, "hw": {"P": HW}}; then every record a
      read_committed consumer reads from offset 0, {"p", "o", "v"} lines;
      then the processor group's committed offsets of IN,
      {"txn_committed": {"P": OFFSET}}.
"""

import json
import os
import sys
import time

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError,
                             KafkaException, Producer, TopicPartition)

# Bound on any single mode, whatever STOP says.
MAX_SECONDS = 3 * 3600
FINAL_READ_SECONDS = 180
# transaction.timeout.ms of the processor plus the abort interval the run
# sets, with room to spare.
LSO_WAIT_SECONDS = 60
# A read_committed read is over once nothing came for this long after the
# LSO was reached (control batches leave no record to see the end by).
IDLE_END_SECONDS = 5
COMMIT_EVERY = 50


class History:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def write(self, event):
        self.f.write(json.dumps(event, separators=(",", ":")) + "\n")
        self.f.flush()


def stopped(stop, started):
    return os.path.exists(stop) or time.time() - started > MAX_SECONDS


def progress(what):
    print("%s %s" % (time.strftime("%H:%M:%S"), what), file=sys.stderr, flush=True)


def produce(bootstrap, topic, name, rate, out, stop):
    history = History(out)
    started = time.time()
    interval = 1.0 / float(rate)
    n = 0
    generation = 0
    acked = failed = 0
    fatal = [False]

    def on_error(err):
        # Without an error callback, confluent-kafka raises a fatal error
        # out of poll(), which ended this process before it could record
        # the failed records or start a new producer (seen with a fatal
        # OUT_OF_ORDER_SEQUENCE_NUMBER). The producer is replaced by the loop,
        # and the error is recorded for the checker below.
        # librdkafka logs the other errors itself (broker connections).
        if err.fatal() and not fatal[0]:
            progress("fatal producer error: %s" % err)
            fatal[0] = True
            # The failed records may not carry the fatal flag themselves:
            # an event of its own makes the checker count the violation.
            history.write({"id": "%s-fatal-%d" % (name, generation), "err": err.name(),
                           "fatal": True, "reason": err.str()})

    def new_producer():
        return Producer({
            "bootstrap.servers": bootstrap,
            "error_cb": on_error,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            # A record not acknowledged within this is reported failed
            # (indeterminate for the checker), well after any one fault
            # of the schedule has healed.
            "message.timeout.ms": 60000,
        })

    def report(err, msg):
        nonlocal acked, failed
        value = msg.value().decode()
        if err is None:
            acked += 1
            history.write({"id": value, "p": msg.partition(), "o": msg.offset()})
        else:
            failed += 1
            history.write({"id": value, "err": err.name(), "fatal": err.fatal()})
            if err.fatal():
                fatal[0] = True

    p = new_producer()
    last_progress = time.time()
    next_send = time.time()
    while not stopped(stop, started):
        if fatal[0]:
            # The idempotent producer cannot go on after a fatal error:
            # drain what it still reports, then start a new one.
            p.flush(10)
            generation += 1
            progress("fatal error: new producer (generation %d)" % generation)
            p = new_producer()
            fatal[0] = False
        now = time.time()
        if now < next_send:
            p.poll(min(next_send - now, 0.05))
            continue
        try:
            p.produce(topic, value=("%s-%d" % (name, n)).encode(), on_delivery=report)
            n += 1
            next_send += interval
        except BufferError:
            p.poll(0.05)
        p.poll(0)
        if time.time() - last_progress > 5:
            last_progress = time.time()
            progress("%s: sent %d, acked %d, failed %d" % (name, n, acked, failed))
    left = p.flush(90)
    progress("%s done: sent %d, acked %d, failed %d, unresolved %d" % (name, n, acked, failed, left))


def reader_consumer(bootstrap, extra=None):
    conf = {
        "bootstrap.servers": bootstrap,
        # A group id is required by the client; the reader never joins.
        "group.id": "faults-reader-%d" % os.getpid(),
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        # An out-of-range position would otherwise skip silently; starting
        # over shows up as offsets going back, which the checker reports.
        "auto.offset.reset": "earliest",
    }
    conf.update(extra or {})
    return Consumer(conf)


def read(bootstrap, topic, partitions, out, stop):
    history = History(out)
    started = time.time()
    c = reader_consumer(bootstrap)
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(int(partitions))])
    count = 0
    last_progress = time.time()
    while not stopped(stop, started):
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() != KafkaError._PARTITION_EOF:
                history.write({"err": m.error().name()})
            continue
        history.write({"p": m.partition(), "o": m.offset(), "id": m.value().decode()})
        count += 1
        if time.time() - last_progress > 5:
            last_progress = time.time()
            progress("reader: %d records" % count)
    c.close()
    progress("reader done: %d records" % count)


def group(bootstrap, topic, group_id, out, stop, protocol="classic"):
    history = History(out)
    started = time.time()
    settings = {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if protocol == "consumer":
        # KIP-848: the broker keeps the session; the client may not set it.
        settings["group.protocol"] = "consumer"
    else:
        settings.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000})
    c = Consumer(settings)
    c.subscribe([topic])
    since_commit = 0
    consumed = 0
    while not stopped(stop, started):
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        consumed += 1
        since_commit += 1
        if since_commit >= COMMIT_EVERY:
            since_commit = 0
            try:
                committed = c.commit(asynchronous=False)
            except KafkaException as e:
                history.write({"commit_err": e.args[0].name()})
                continue
            offsets = {str(tp.partition): tp.offset for tp in committed
                       if tp.error is None and tp.offset >= 0}
            if offsets:
                history.write({"commit": offsets, "group": group_id})
    c.close()
    progress("group member done: %d consumed" % consumed)


def committed_offsets(c, topic, partitions):
    tps = [TopicPartition(topic, p) for p in range(int(partitions))]
    got = c.committed(tps, timeout=5)
    return {str(tp.partition): tp.offset for tp in got if tp.error is None and tp.offset >= 0}


def watch(bootstrap, topic, partitions, group_id, out, stop):
    history = History(out)
    started = time.time()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group_id,
                  "enable.auto.commit": False})
    while not stopped(stop, started):
        try:
            offsets = committed_offsets(c, topic, partitions)
            if offsets:
                history.write({"committed": offsets, "group": group_id})
        except KafkaException:
            pass  # a fault in progress; the next round asks again
        time.sleep(0.5)
    c.close()


def final(bootstrap, topic, partitions, group_id, out):
    history = History(out)
    deadline = time.time() + FINAL_READ_SECONDS
    c = reader_consumer(bootstrap)
    ends = {}
    for p in range(int(partitions)):
        _, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        ends[p] = high
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends if ends[p] > 0])
    positions = {p: 0 for p in ends}
    while any(positions[p] < ends[p] for p in ends) and time.time() < deadline:
        m = c.poll(1.0)
        if m is None or m.error():
            continue
        history.write({"p": m.partition(), "o": m.offset(), "id": m.value().decode()})
        positions[m.partition()] = m.offset() + 1
    c.close()
    history.write({"end": {str(p): h for p, h in ends.items()},
                   "read_to": {str(p): o for p, o in positions.items()}})
    for g in group_id.split(","):
        w = Consumer({"bootstrap.servers": bootstrap, "group.id": g,
                      "enable.auto.commit": False})
        history.write({"final_committed": committed_offsets(w, topic, partitions),
                       "group": g})
        w.close()
    progress("final read: %d records" % sum(positions.values()))


def txn_final(bootstrap, in_topic, out_topic, partitions, group_id, out):
    history = History(out)
    parts = range(int(partitions))
    uncommitted = reader_consumer(bootstrap, {"isolation.level": "read_uncommitted"})
    committed = reader_consumer(bootstrap, {"isolation.level": "read_committed"})
    deadline = time.time() + LSO_WAIT_SECONDS
    while True:
        hw = {p: uncommitted.get_watermark_offsets(TopicPartition(out_topic, p), timeout=30)[1]
              for p in parts}
        # A read_committed client's ListOffsets LATEST is the LSO.
        lso = {p: committed.get_watermark_offsets(TopicPartition(out_topic, p), timeout=30)[1]
               for p in parts}
        if lso == hw or time.time() > deadline:
            break
        time.sleep(1)
    uncommitted.close()
    history.write({"lso": {str(p): o for p, o in lso.items()},
                   "hw": {str(p): o for p, o in hw.items()}})
    committed.assign([TopicPartition(out_topic, p, OFFSET_BEGINNING) for p in parts])
    read_deadline = time.time() + FINAL_READ_SECONDS
    last_record = time.time()
    count = 0
    while time.time() < read_deadline and time.time() - last_record < IDLE_END_SECONDS:
        m = committed.poll(0.5)
        if m is None or m.error():
            continue
        last_record = time.time()
        history.write({"p": m.partition(), "o": m.offset(), "v": m.value().decode()})
        count += 1
    committed.close()
    w = Consumer({"bootstrap.servers": bootstrap, "group.id": group_id,
                  "enable.auto.commit": False})
    history.write({"txn_committed": committed_offsets(w, in_topic, partitions)})
    w.close()
    progress("transactional final read: %d records" % count)


def main(argv):
    mode, args = argv[1], argv[2:]
    if mode == "produce":
        produce(*args)
    elif mode == "read":
        read(*args)
    elif mode == "group":
        group(*args)
    elif mode == "watch":
        watch(*args)
    elif mode == "final":
        final(*args)
    elif mode == "txn-final":
        txn_final(*args)
    else:
        sys.exit("unknown mode %r; see the module docstring" % mode)


if __name__ == "__main__":
    main(sys.argv)
