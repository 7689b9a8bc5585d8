"""Transactions through a Python client against pinlog (tests/transactions.rs).

    python3 txn_check.py confluent|kafka-python <bootstrap> <prefix>

Creates <prefix>-out (2 partitions), then with a transactional producer
commits 10 records, aborts 10 and commits 10 more. A read_committed consumer
must read exactly the 20 committed ones, a read_uncommitted one all 30.
Prints "ok <client>" or exits non-zero saying what went wrong. Every wait is
bounded (STEP_SECONDS).
"""

import sys
import time
import uuid

STEP_SECONDS = 60


def fail(why):
    print(f"FAIL: {why}", file=sys.stderr)
    sys.exit(1)


def confluent(bootstrap, topic):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        f.result(STEP_SECONDS)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-py-txn"})
    p.init_transactions(STEP_SECONDS)
    for tag in ["committed-1", "aborted", "committed-2"]:
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, key=f"k{i}", value=f"{tag}-{i}")
        p.flush(STEP_SECONDS)
        if tag == "aborted":
            p.abort_transaction(STEP_SECONDS)
        else:
            p.commit_transaction(STEP_SECONDS)

    def read(isolation):
        c = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4()}",
            "isolation.level": isolation,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        })
        tps = [TopicPartition(topic, p, 0) for p in range(2)]
        c.assign(tps)
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), STEP_SECONDS)[1] for p in range(2)}
        values, deadline = [], time.time() + STEP_SECONDS

        def positions():
            # The fetch position moves past control records (markers), which
            # are never delivered, so it reaches the end offset.
            return {tp.partition: tp.offset for tp in c.position(tps)}

        while any(positions()[p] < ends[p] for p in range(2)):
            if time.time() > deadline:
                fail(f"{isolation} read stopped at {positions()}, ends {ends}")
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    continue
                fail(f"consume error: {m.error()}")
            values.append(m.value().decode())
        c.close()
        return sorted(values)

    return read("read_committed"), read("read_uncommitted")


def kafka_python(bootstrap, topic):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 2, 1)], timeout_ms=STEP_SECONDS * 1000)
    admin.close()
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{topic}-py-txn")
    p.init_transactions()
    for tag in ["committed-1", "aborted", "committed-2"]:
        p.begin_transaction()
        for i in range(10):
            p.send(topic, key=f"k{i}".encode(), value=f"{tag}-{i}".encode())
        p.flush(timeout=STEP_SECONDS)
        if tag == "aborted":
            p.abort_transaction()
        else:
            p.commit_transaction()
    p.close()

    def read(isolation):
        c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                          enable_auto_commit=False, group_id=None)
        tps = [TopicPartition(topic, p) for p in range(2)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        ends = c.end_offsets(tps)
        values, deadline = [], time.time() + STEP_SECONDS
        while any(c.position(tp) < ends[tp] for tp in tps):
            if time.time() > deadline:
                fail(f"{isolation} read stopped short of {ends}")
            for records in c.poll(timeout_ms=200).values():
                values.extend(r.value.decode() for r in records)
        c.close()
        return sorted(values)

    return read("read_committed"), read("read_uncommitted")


def main(argv):
    client, bootstrap, prefix = argv[1], argv[2], argv[3]
    topic = f"{prefix}-out"
    run = {"confluent": confluent, "kafka-python": kafka_python}[client]
    committed, uncommitted = run(bootstrap, topic)
    if len(committed) != 20 or any(v.startswith("aborted") for v in committed):
        fail(f"read_committed read {committed}")
    if len(uncommitted) != 30:
        fail(f"read_uncommitted read {len(uncommitted)} records: {uncommitted}")
    print(f"ok {client}")


if __name__ == "__main__":
    main(sys.argv)
