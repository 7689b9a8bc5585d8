"""kafka-python (pure Python; compression through its crc32c, lz4, snappy
and zstd extras) against a broker, driven by tests/broker/clients.rs. Usage:

  kafka_python_client.py create  BOOTSTRAP PARTITIONS TOPIC...
  kafka_python_client.py produce BOOTSTRAP N PREFIX CODEC...   # topic PREFIX-CODEC
  kafka_python_client.py consume BOOTSTRAP TOPIC...            # to the end offsets

Data and output format: spec.py. Every step has a time limit (STEP_SECONDS);
set PINLOG_CLIENT_DEBUG=1 for kafka-python's debug log on stderr.
"""

import logging
import os
import sys

import kafka.codec
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spec  # noqa: E402

STEP_SECONDS = 60
COMMON = {"request_timeout_ms": 20000, "client_id": "pinlog-test-kafka-python"}


def create(bootstrap, partitions, topics):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, **COMMON)
    try:
        resp = admin.create_topics(
            [NewTopic(t, int(partitions), 1) for t in topics], timeout_ms=20000)
        # kafka-python 3 returns the decoded response as a dict; check each
        # topic's error code (older versions return a response object).
        results = resp.get("topics", []) if isinstance(resp, dict) else []
        failed = [r for r in results if r.get("error_code")]
        if failed:
            spec.die("create_topics failed: %s" % failed)
        print("created %s" % " ".join(topics), flush=True)
    finally:
        admin.close()


def produce(bootstrap, n, prefix, codecs):
    n = int(n)
    # Without the extras kafka-python silently cannot compress or read
    # compressed batches; say so instead of failing obscurely.
    have = {"gzip": kafka.codec.has_gzip(), "snappy": kafka.codec.has_snappy(),
            "lz4": kafka.codec.has_lz4(), "zstd": kafka.codec.has_zstd()}
    missing = [c for c in codecs if c != "none" and not have[c]]
    if missing:
        spec.die("kafka-python lacks codecs %s: pip install 'kafka-python[crc32c,lz4,snappy,zstd]'"
                 % missing)
    for codec in codecs:
        topic = "%s-%s" % (prefix, codec)
        p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                          compression_type=None if codec == "none" else codec,
                          max_block_ms=20000, **COMMON)
        futures = []
        for seq in range(n):
            futures.append(p.send(
                topic, key=spec.key(seq).encode(), value=spec.value(codec, seq).encode(),
                headers=[(h, v.encode()) for h, v in spec.headers(codec, seq)]))
        p.flush(timeout=STEP_SECONDS)
        errors = []
        for f in futures:
            if not f.is_done:
                errors.append("not done")
            elif f.exception is not None:
                errors.append(repr(f.exception))
        p.close(timeout=10)
        if errors:
            spec.die("%s: %d of %d records failed, first: %s"
                     % (topic, len(errors), n, errors[:5]))
        print("produced %d to %s" % (n, topic), flush=True)


def consume(bootstrap, topics):
    # No group: assign() + seek_to_beginning(), nothing committed.
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      **COMMON)
    deadline = spec.Deadline(STEP_SECONDS)
    out = []
    try:
        tps = []
        for t in topics:
            parts = None
            while not parts:  # metadata for the topic arrives asynchronously
                if deadline.expired():
                    spec.die("no partitions known for %s" % t)
                parts = c.partitions_for_topic(t)
            tps += [TopicPartition(t, p) for p in sorted(parts)]
        c.assign(tps)
        c.seek_to_beginning()
        end = c.end_offsets(tps)
        pending = {tp for tp in tps if end[tp] > 0}
        while pending:
            if deadline.expired():
                spec.die("consume timed out; partitions not read to the end: %s"
                         % sorted(pending))
            batch = c.poll(timeout_ms=1000)
            for tp, records in batch.items():
                for m in records:
                    out.append(spec.line(m.topic, m.partition, m.offset, m.key, m.value,
                                         m.headers))
                    if m.offset + 1 >= end[tp]:
                        pending.discard(tp)
    finally:
        c.close()
    sys.stdout.write("".join(l + "\n" for l in out))


def main(argv):
    if len(argv) < 3:
        spec.die(__doc__)
    if os.environ.get("PINLOG_CLIENT_DEBUG"):
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    cmd, bootstrap, rest = argv[1], argv[2], argv[3:]
    if cmd == "create":
        create(bootstrap, rest[0], rest[1:])
    elif cmd == "produce":
        produce(bootstrap, rest[0], rest[1], rest[2:])
    elif cmd == "consume":
        consume(bootstrap, rest)
    else:
        spec.die("unknown command %r\n%s" % (cmd, __doc__))


if __name__ == "__main__":
    main(sys.argv)
