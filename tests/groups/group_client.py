"""Consumer-group clients for tests/groups.rs: kafka-python ("kp") and
confluent-kafka ("ck") consumers in one group, plus the producer, admin and
offset helpers the tests need. Usage:

  group_client.py create   BOOTSTRAP TOPIC PARTITIONS [NAME=VALUE...]  # topic configs
  group_client.py produce  BOOTSTRAP TOPIC [--start S] [--count N] [--rate R] [--stop FILE]
  group_client.py consume  LIB BOOTSTRAP GROUP TOPIC [options, see consume_args]
  group_client.py commit   BOOTSTRAP GROUP TOPIC PARTITION=OFFSET...  # from outside the group
  group_client.py committed LIB BOOTSTRAP GROUP TOPIC
  group_client.py describe BOOTSTRAP GROUP                            # DescribeGroups
  group_client.py offsets  BOOTSTRAP TOPIC                            # log start and end
  group_client.py delete-records BOOTSTRAP TOPIC PARTITION=OFFSET...

Every command prints events on stdout, one line each, flushed one by one,
so that tests/groups.rs can read the output of a consumer that is still
running or was killed with SIGKILL (it ignores a last line without its
newline). An event is `EVENT key=value key=value ...`: lists are written
`a,b,c`, partition maps `partition:offset,...` with `-` for "none", and
spaces, tabs, newlines and `%` in text are %-escaped, so no value holds
whitespace. Every event has `t`, wall-clock milliseconds. Records are
`rec p=P o=OFFSET k=KEY v=VALUE`. A consumer also reports its rebalance
callbacks as they are called (`assigned`, `revoked`, `lost`, with the
partitions the callback got: all of them under an eager protocol, only
the ones that move under a cooperative one), `assignment parts=... gen=G`
after a poll that changed its assignment or generation (`-` where the
client does not expose the generation), and confluent-kafka's error
callback as `client_error`.

Record `seq` of a topic T: key "key-<seq % 37>" (37 keys: spread over the
partitions), value "T/<seq as 7 digits>/<key>", so a consumed value names
its topic, sequence number and key; tests/groups.rs checks all three.

Every command has a time limit (--max-seconds, default 90 s) and exits 3
when it runs out, so no client call waits forever. Set
PINLOG_CLIENT_DEBUG=1 for the client libraries' debug logs on stderr.
"""

import argparse
import logging
import os
import sys
import time

KEYS = 37
# Exit status when --max-seconds ran out, to tell it from a client error (1).
EXIT_DEADLINE = 3


def key(seq):
    return "key-%d" % (seq % KEYS)


def value(topic, seq):
    return "%s/%07d/%s" % (topic, seq, key(seq))


def fmt(v):
    """One value of an event line (see the module doc)."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return ",".join("%s:%s" % (k, fmt(x)) for k, x in sorted(v.items()))
    if isinstance(v, (list, tuple)):
        return ",".join(fmt(x) for x in v)
    s = str(v)
    for ch, esc in (("%", "%25"), (" ", "%20"), ("\t", "%09"), ("\n", "%0A"), ("\r", "%0D")):
        s = s.replace(ch, esc)
    return s


def emit(ev, **fields):
    # Wall-clock milliseconds: tests/groups.rs orders events of different
    # processes by them (a rebalance seen by several consumers).
    fields["t"] = int(time.time() * 1000)
    line = " ".join([ev] + ["%s=%s" % (k, fmt(v)) for k, v in sorted(fields.items())])
    # One write per line: a consumer killed with SIGKILL leaves whole lines.
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def die(msg, status=1):
    emit("fatal", error=msg)
    print("ERROR: " + msg, file=sys.stderr, flush=True)
    sys.exit(status)


def text(b):
    if b is None:
        return None
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return max(0.0, self.end - time.monotonic())

    def expired(self):
        return time.monotonic() >= self.end


def debug():
    return bool(os.environ.get("PINLOG_CLIENT_DEBUG"))


def ck_conf(bootstrap, **extra):
    c = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000}
    if debug():
        c["debug"] = "cgrp,protocol,broker,consumer,fetch"
    c.update(extra)
    return c


def parse_offsets(pairs):
    out = {}
    for pair in pairs:
        p, o = pair.split("=", 1)
        out[int(p)] = int(o)
    return out


# ---------------------------------------------------------------------------
# Admin and producer (confluent-kafka: its AdminClient and idempotent
# producer are the best tested here, see tests/broker/clients.rs).

def create(a):
    from confluent_kafka.admin import AdminClient, NewTopic
    configs = dict(kv.split("=", 1) for kv in a.configs)
    admin = AdminClient(ck_conf(a.bootstrap))
    fs = admin.create_topics([NewTopic(a.topic, num_partitions=a.partitions,
                                       replication_factor=a.replication_factor,
                                       config=configs)],
                             request_timeout=20)
    for topic, f in fs.items():
        f.result(timeout=30)  # raises KafkaException on a failed creation
        emit("created", topic=topic, partitions=a.partitions, configs=configs)


def produce(a):
    from confluent_kafka import Producer
    deadline = Deadline(a.max_seconds)
    p = Producer(ck_conf(a.bootstrap, **{
        "enable.idempotence": True,
        "linger.ms": 5,
        "message.timeout.ms": 30000,
    }))
    errors = []
    delivered = [0]

    def on_delivery(err, msg):
        if err is not None:
            errors.append("%s [%s]: %s" % (msg.topic(), msg.partition(), err))
            return
        delivered[0] += 1
        seq = int(text(msg.value()).split("/")[1])
        emit("dlv", seq=seq, p=msg.partition(), o=msg.offset())

    seq = a.start
    started = time.monotonic()
    while a.count is None or seq < a.start + a.count:
        if a.stop and os.path.exists(a.stop):
            break
        if deadline.expired():
            die("produce: deadline with %d records sent" % (seq - a.start), EXIT_DEADLINE)
        if a.rate:
            # Paced: record `seq` is due at started + (seq - start) / rate.
            due = started + (seq - a.start) / a.rate
            wait = due - time.monotonic()
            if wait > 0:
                p.poll(min(wait, 0.1))
                continue
        try:
            p.produce(a.topic, key=key(seq), value=value(a.topic, seq), on_delivery=on_delivery)
            seq += 1
        except BufferError:  # local queue full: let deliveries drain it
            p.poll(0.05)
        p.poll(0)
    left = p.flush(max(1.0, deadline.left()))
    if left or errors:
        die("produce: %d undelivered, %d delivery errors, first: %s"
            % (left, len(errors), errors[:5]))
    emit("produced", n=delivered[0], first=a.start, next=seq)


def offsets(a):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(ck_conf(a.bootstrap, **{"group.id": "pinlog-test-unused",
                                         "enable.auto.commit": False}))
    try:
        md = c.list_topics(a.topic, timeout=20)
        tm = md.topics.get(a.topic)
        if tm is None or tm.error is not None:
            die("metadata for %s: %s" % (a.topic, tm.error if tm else "missing"))
        start, end = {}, {}
        for pid in sorted(tm.partitions):
            lo, hi = c.get_watermark_offsets(TopicPartition(a.topic, pid), timeout=20)
            start[pid], end[pid] = lo, hi
        emit("offsets", start=start, end=end)
    finally:
        c.close()


def delete_records(a):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient
    admin = AdminClient(ck_conf(a.bootstrap))
    tps = [TopicPartition(a.topic, p, o) for p, o in sorted(parse_offsets(a.offsets).items())]
    fs = admin.delete_records(tps, request_timeout=20, operation_timeout=10)
    low = {}
    for tp, f in fs.items():
        # DeletedRecords.low_watermark: the partition's new log start offset.
        low[tp.partition] = f.result(timeout=30).low_watermark
    emit("deleted", low=low)


def commit(a):
    """A commit from outside the group (no subscription: generation -1, no
    member id), as tools and stream frameworks do; Kafka accepts it while
    the group has no members."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(ck_conf(a.bootstrap, **{"group.id": a.group, "enable.auto.commit": False}))
    try:
        tps = [TopicPartition(a.topic, p, o) for p, o in sorted(parse_offsets(a.offsets).items())]
        result = c.commit(offsets=tps, asynchronous=False)
        bad = [str(tp) for tp in result if tp.error is not None]
        if bad:
            die("commit: partition errors %s" % bad)
        emit("commit", offsets={tp.partition: tp.offset for tp in result})
    finally:
        c.close()


# ---------------------------------------------------------------------------
# Consumers. Both libraries behind one small interface, so that the loop in
# consume() is the same for both.

def kp_assignors():
    """kafka-python's assignors by protocol name (as librdkafka names them)."""
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    return {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
            "sticky": StickyPartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}


class KpConsumer:
    """kafka-python: KafkaConsumer with a ConsumerRebalanceListener."""

    lib = "kp"

    def __init__(self, a):
        from kafka import KafkaConsumer, TopicPartition
        from kafka.consumer.subscription_state import ConsumerRebalanceListener
        from kafka.structs import OffsetAndMetadata
        import kafka.errors
        self.TopicPartition, self.OffsetAndMetadata = TopicPartition, OffsetAndMetadata
        self.errors = kafka.errors
        self.a = a
        reset = {"earliest": "earliest", "latest": "latest", "none": "none"}[a.reset]
        extra = {}
        if a.strategy:
            extra["partition_assignment_strategy"] = [kp_assignors()[n] for n in a.strategy]
        if a.instance_id:
            extra["group_instance_id"] = a.instance_id
        self.c = KafkaConsumer(
            bootstrap_servers=a.bootstrap, group_id=a.group, client_id=a.name,
            enable_auto_commit=(a.commit == "auto"), auto_commit_interval_ms=500,
            auto_offset_reset=reset, session_timeout_ms=a.session_ms,
            heartbeat_interval_ms=a.heartbeat_ms, max_poll_interval_ms=a.max_poll_ms,
            max_poll_records=a.batch, request_timeout_ms=20000, **extra)

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                emit("revoked", parts=sorted(tp.partition for tp in revoked))

            def on_partitions_assigned(self, assigned):
                emit("assigned", parts=sorted(tp.partition for tp in assigned))

            def on_partitions_lost(self, lost):
                # Without this, kafka-python reports lost partitions as
                # revoked; the tests tell the two apart.
                emit("lost", parts=sorted(tp.partition for tp in lost))

        self.listener = Listener()

    def partitions(self):
        deadline = Deadline(20)
        while not deadline.expired():
            ps = self.c.partitions_for_topic(self.a.topic)
            if ps:
                return sorted(ps)
            time.sleep(0.1)
        die("no partitions for %s" % self.a.topic)

    def committed(self, parts):
        out = {}
        for p in parts:
            off = self.c.committed(self.TopicPartition(self.a.topic, p), timeout_ms=20000)
            out[p] = off  # None when nothing is committed
        return out

    def subscribe(self):
        self.c.subscribe([self.a.topic], listener=self.listener)

    def poll(self):
        """Records as (partition, offset, key, value), or raises with the
        error's class name for an error the consumer surfaces."""
        try:
            batches = self.c.poll(timeout_ms=200, max_records=self.a.batch)
        except self.errors.KafkaError as e:
            raise ConsumerError(type(e).__name__, str(e))
        out = []
        for tp, msgs in batches.items():
            out.extend((m.partition, m.offset, text(m.key), text(m.value)) for m in msgs)
        return out

    def commit(self, offsets):
        try:
            self.c.commit({self.TopicPartition(self.a.topic, p): self.OffsetAndMetadata(o, "", -1)
                           for p, o in offsets.items()}, timeout_ms=20000)
        except self.errors.KafkaError as e:
            raise ConsumerError(type(e).__name__, str(e))

    def assignment(self):
        return sorted(tp.partition for tp in (self.c.assignment() or ()))

    def generation(self):
        # group_metadata() is public (KIP-447); -1 before the first join.
        return self.c.group_metadata().generation_id

    def position(self, p):
        return self.c.position(self.TopicPartition(self.a.topic, p), timeout_ms=20000)

    def close(self):
        # Commits first when auto-commit is on, then LeaveGroup.
        self.c.close(timeout_ms=20000)


class CkConsumer:
    """confluent-kafka: Consumer with on_assign/on_revoke callbacks."""

    lib = "ck"

    def __init__(self, a):
        from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
        self.TopicPartition, self.KafkaError, self.KafkaException = \
            TopicPartition, KafkaError, KafkaException
        self.a = a
        # librdkafka names 'none' "error": it then reports
        # _AUTO_OFFSET_RESET as a consumed message's error.
        reset = {"earliest": "earliest", "latest": "latest", "none": "error"}[a.reset]
        conf = {
            "group.id": a.group, "client.id": a.name,
            "enable.auto.commit": a.commit == "auto", "auto.commit.interval.ms": 500,
            "auto.offset.reset": reset, "session.timeout.ms": a.session_ms,
            "heartbeat.interval.ms": a.heartbeat_ms, "max.poll.interval.ms": a.max_poll_ms,
        }
        if a.strategy:
            conf["partition.assignment.strategy"] = ",".join(a.strategy)
        if a.instance_id:
            conf["group.instance.id"] = a.instance_id
        if getattr(a, "group_protocol", "classic") == "consumer":
            # KIP-848: the broker owns the session, heartbeat interval and
            # assignor, which librdkafka refuses to be told.
            for k in ("session.timeout.ms", "heartbeat.interval.ms",
                      "partition.assignment.strategy"):
                conf.pop(k, None)
            conf["group.protocol"] = "consumer"

        last_error = [None, 0.0]

        def on_error(err):
            # Errors librdkafka reports outside consume(), such as a failed
            # JoinGroup it retries by itself. While the broker is down it
            # reports every failed connect, so a repeat is shown once a
            # second at most.
            now = time.monotonic()
            if last_error[0] == err.name() and now - last_error[1] < 1.0:
                return
            last_error[:] = [err.name(), now]
            emit("client_error", name=err.name(), detail=err.str())

        conf["error_cb"] = on_error
        self.c = Consumer(ck_conf(a.bootstrap, **conf))

    def partitions(self):
        md = self.c.list_topics(self.a.topic, timeout=20)
        tm = md.topics.get(self.a.topic)
        if tm is None or tm.error is not None:
            die("metadata for %s: %s" % (self.a.topic, tm.error if tm else "missing"))
        return sorted(tm.partitions)

    def committed(self, parts):
        res = self.c.committed([self.TopicPartition(self.a.topic, p) for p in parts], timeout=20)
        # librdkafka reports "nothing committed" as OFFSET_INVALID (-1001).
        return {tp.partition: (tp.offset if tp.offset >= 0 else None) for tp in res}

    def subscribe(self):
        def on_assign(consumer, parts):
            emit("assigned", parts=sorted(tp.partition for tp in parts))

        def on_revoke(consumer, parts):
            emit("revoked", parts=sorted(tp.partition for tp in parts))

        def on_lost(consumer, parts):
            emit("lost", parts=sorted(tp.partition for tp in parts))

        # The callbacks do not assign themselves: confluent-kafka then calls
        # assign() (eager) or incremental_assign() (cooperative) after them,
        # so the parts they report are what the protocol hands over.
        self.c.subscribe([self.a.topic], on_assign=on_assign, on_revoke=on_revoke,
                         on_lost=on_lost)

    def poll(self):
        out = []
        for m in self.c.consume(num_messages=self.a.batch, timeout=0.2):
            err = m.error()
            if err is not None:
                if err.code() == self.KafkaError._PARTITION_EOF:
                    continue
                raise ConsumerError(err.name(), err.str())
            out.append((m.partition(), m.offset(), text(m.key()), text(m.value())))
        return out

    def commit(self, offsets):
        tps = [self.TopicPartition(self.a.topic, p, o) for p, o in offsets.items()]
        try:
            result = self.c.commit(offsets=tps, asynchronous=False)
        except self.KafkaException as e:
            err = e.args[0]
            raise ConsumerError(err.name(), err.str())
        bad = [tp for tp in result if tp.error is not None]
        if bad:
            raise ConsumerError(bad[0].error.name(), str(bad))

    def assignment(self):
        return sorted(tp.partition for tp in self.c.assignment())

    def generation(self):
        # confluent-kafka does not expose the generation.
        return None

    def position(self, p):
        off = self.c.position([self.TopicPartition(self.a.topic, p)])[0].offset
        return off if off >= 0 else None

    def close(self):
        # Commits first when auto-commit is on, then LeaveGroup.
        self.c.close()


class ConsumerError(Exception):
    def __init__(self, name, detail):
        super().__init__(name, detail)
        self.name, self.detail = name, detail


def consume(a):
    """One group member: subscribe, consume, emit events, stop when told.

    It stops (then commits per --commit, closes, which leaves the group, and
    emits "closed") when the --stop file exists, after --max-records
    records, when --until-end holds, after --positions, or on a consumer
    error with --exit-on-error. Records beyond --max-records in a batch are
    neither emitted nor committed.
    """
    deadline = Deadline(a.max_seconds)
    c = KpConsumer(a) if a.lib == "kp" else CkConsumer(a)
    emit("start", name=a.name, lib=a.lib, group=a.group, pid=os.getpid())
    parts = c.partitions()
    committed_at_start = None
    if a.report_committed or a.until_end or a.positions:
        committed_at_start = c.committed(parts)
        emit("committed", offsets=committed_at_start)
    ends = None
    if a.until_end:
        ends = OffsetsReader(a.bootstrap, a.topic).end_offsets(parts)
        emit("ends", offsets=ends)
    c.subscribe()
    positions_deadline = Deadline(a.positions_wait if a.positions_wait is not None else a.max_seconds)
    consumed = 0
    last = {}  # partition -> last consumed offset, for --until-end
    shown = None
    stalled = False
    reason = None
    while reason is None:
        if a.stop and os.path.exists(a.stop):
            reason = "stop file"
            break
        if deadline.expired():
            die("consume: deadline; consumed %d records" % consumed, EXIT_DEADLINE)
        try:
            recs = c.poll()
        except ConsumerError as e:
            emit("error", name=e.name, detail=e.detail)
            if a.exit_on_error:
                reason = "error"
                break
            time.sleep(0.2)
            continue
        if a.max_records is not None:
            recs = recs[:max(0, a.max_records - consumed)]
        batch_next = {}
        for (p, o, k, v) in recs:
            emit("rec", p=p, o=o, k=k, v=v)
            last[p] = o
            batch_next[p] = o + 1
        consumed += len(recs)
        if a.commit == "sync" and batch_next:
            # The records are in our output (stdout is flushed per line)
            # before their offsets are committed: at-least-once, and exactly
            # once as long as no member dies between the two.
            try:
                c.commit(batch_next)
                emit("commit", offsets=batch_next)
            except ConsumerError as e:
                emit("commit_failed", name=e.name, detail=e.detail, offsets=batch_next)
        now = c.assignment()
        state = (now, c.generation())
        if state != shown:
            # gen is "-" where the client does not expose it (confluent-kafka).
            emit("assignment", parts=now, gen=state[1])
            shown = state
        if a.stall_after is not None and not stalled and consumed >= a.stall_after:
            # An application stuck in its processing: no poll() for longer
            # than max.poll.interval.ms, while the client's background
            # thread keeps heartbeating.
            stalled = True
            emit("stall", seconds=a.stall_seconds, consumed=consumed)
            time.sleep(a.stall_seconds)
            emit("resume")
        if a.max_records is not None and consumed >= a.max_records:
            reason = "max records"
        elif ends is not None and all(
                ends[p] == 0 or last.get(p, -1) >= ends[p] - 1
                or (committed_at_start.get(p) or 0) >= ends[p] for p in parts):
            reason = "end offsets"
        elif a.positions and now and all(
                c.position(p) not in (None, committed_at_start.get(p)) for p in now):
            # The position moved off the committed offset: the reset policy
            # was applied (the committed offset is out of range in --positions
            # runs).
            reason = "positions"
            emit("positions", offsets={p: c.position(p) for p in now})
        elif a.positions and now and positions_deadline.expired():
            reason = "positions (timed out)"
            emit("positions", offsets={p: c.position(p) for p in now})
    emit("stopping", reason=reason, consumed=consumed)
    if a.commit == "close-sync" and last:
        c.commit({p: o + 1 for p, o in last.items()})
        emit("commit", offsets={p: o + 1 for p, o in last.items()})
    c.close()
    emit("closed", consumed=consumed)


class OffsetsReader:
    """End offsets through a group-less confluent-kafka consumer, so that the
    member under test sends nothing but its own group's requests."""

    def __init__(self, bootstrap, topic):
        self.bootstrap, self.topic = bootstrap, topic

    def end_offsets(self, parts):
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer(ck_conf(self.bootstrap, **{"group.id": "pinlog-test-unused",
                                                "enable.auto.commit": False}))
        try:
            return {p: c.get_watermark_offsets(TopicPartition(self.topic, p), timeout=20)[1]
                    for p in parts}
        finally:
            c.close()


def describe(a):
    """The group as DescribeGroups reports it (confluent-kafka's admin
    client): one `group` event, then a `member` event per member."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient(ck_conf(a.bootstrap))
    d = admin.describe_consumer_groups([a.group], request_timeout=20)[a.group].result(timeout=30)
    emit("group", state=d.state.name, assignor=d.partition_assignor, members=len(d.members))
    for m in sorted(d.members, key=lambda m: m.client_id):
        parts = sorted(tp.partition for tp in (m.assignment.topic_partitions or []))
        emit("member", client=m.client_id, instance=m.group_instance_id, id=m.member_id,
             parts=parts)


def committed(a):
    c = KpConsumer(a) if a.lib == "kp" else CkConsumer(a)
    parts = c.partitions()
    emit("committed", offsets=c.committed(parts))
    # Never joined the group: close() sends no LeaveGroup and commits nothing.
    c.close()


def consume_args(sub):
    sub.add_argument("lib", choices=["kp", "ck"])
    sub.add_argument("bootstrap")
    sub.add_argument("group")
    sub.add_argument("topic")
    sub.add_argument("--name", default="pinlog-test", help="client id")
    sub.add_argument("--stop", help="stop when this file exists")
    sub.add_argument("--commit", choices=["auto", "sync", "close-sync", "none"], default="auto",
                     help="auto-commit; commit each batch synchronously after emitting it; "
                          "commit what was consumed once, before close; or never")
    sub.add_argument("--reset", choices=["earliest", "latest", "none"], default="earliest")
    sub.add_argument("--session-ms", type=int, default=10000)
    sub.add_argument("--heartbeat-ms", type=int, default=1000)
    sub.add_argument("--max-poll-ms", type=int, default=30000)
    sub.add_argument("--batch", type=int, default=100, help="records per poll at most")
    sub.add_argument("--max-records", type=int)
    sub.add_argument("--until-end", action="store_true",
                     help="stop at the end offsets read at start (a one-member group)")
    sub.add_argument("--report-committed", action="store_true")
    sub.add_argument("--positions", action="store_true",
                     help="stop once every assigned partition's position left its committed "
                          "offset, and report the positions")
    sub.add_argument("--positions-wait", type=float,
                     help="with --positions: report anyway after this many seconds")
    sub.add_argument("--exit-on-error", action="store_true")
    sub.add_argument("--strategy", type=lambda v: v.split(","),
                     help="assignors by protocol name, in preference order: range, "
                          "roundrobin, sticky, cooperative-sticky (default: the client's)")
    sub.add_argument("--instance-id", help="group.instance.id: a static member")
    sub.add_argument("--group-protocol", choices=["classic", "consumer"], default="classic",
                     help="group.protocol (confluent-kafka only): consumer is KIP-848's")
    sub.add_argument("--stall-after", type=int,
                     help="after this many records, stop polling for --stall-seconds")
    sub.add_argument("--stall-seconds", type=float, default=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-seconds", type=float, default=90)
    cmds = ap.add_subparsers(dest="cmd", required=True)
    s = cmds.add_parser("create")
    s.add_argument("bootstrap")
    s.add_argument("topic")
    s.add_argument("partitions", type=int)
    s.add_argument("configs", nargs="*")
    s.add_argument("--replication-factor", type=int, default=1)
    s = cmds.add_parser("produce")
    s.add_argument("bootstrap")
    s.add_argument("topic")
    s.add_argument("--start", type=int, default=0)
    s.add_argument("--count", type=int)
    s.add_argument("--rate", type=float, help="records per second (default: as fast as it can)")
    s.add_argument("--stop", help="stop when this file exists")
    consume_args(cmds.add_parser("consume"))
    s = cmds.add_parser("commit")
    s.add_argument("bootstrap")
    s.add_argument("group")
    s.add_argument("topic")
    s.add_argument("offsets", nargs="+")
    s = cmds.add_parser("committed")
    s.add_argument("lib", choices=["kp", "ck"])
    s.add_argument("bootstrap")
    s.add_argument("group")
    s.add_argument("topic")
    s = cmds.add_parser("describe")
    s.add_argument("bootstrap")
    s.add_argument("group")
    s = cmds.add_parser("offsets")
    s.add_argument("bootstrap")
    s.add_argument("topic")
    s = cmds.add_parser("delete-records")
    s.add_argument("bootstrap")
    s.add_argument("topic")
    s.add_argument("offsets", nargs="+")
    a = ap.parse_args()
    if a.cmd == "committed":
        # KpConsumer/CkConsumer read these; a query never consumes.
        a.name, a.commit, a.reset = "pinlog-test-committed", "none", "earliest"
        a.session_ms, a.heartbeat_ms, a.max_poll_ms, a.batch = 10000, 1000, 30000, 100
        a.strategy, a.instance_id = None, None
    if debug():
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    if a.cmd == "produce" and a.count is None and a.stop is None:
        die("produce needs --count or --stop")
    {"create": create, "produce": produce, "consume": consume, "commit": commit,
     "committed": committed, "describe": describe, "offsets": offsets,
     "delete-records": delete_records}[a.cmd](a)


if __name__ == "__main__":
    main()
