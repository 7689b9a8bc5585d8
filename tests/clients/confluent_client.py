"""confluent-kafka (librdkafka 2.x bundled in the wheel) against a broker,
driven by tests/broker/clients.rs. Usage:

  confluent_client.py create   BOOTSTRAP PARTITIONS TOPIC...
  confluent_client.py produce  BOOTSTRAP N PREFIX CODEC...   # topic PREFIX-CODEC
  confluent_client.py consume  BOOTSTRAP TOPIC...            # to the high watermark
  confluent_client.py metadata BOOTSTRAP TOPIC               # may auto-create TOPIC
  confluent_client.py unknown-topic BOOTSTRAP TOPIC          # auto-create disabled

Data and output format: spec.py. Every step has a time limit (STEP_SECONDS);
set PINLOG_CLIENT_DEBUG=protocol,broker,... for librdkafka debug logs on
stderr.
"""

import os
import sys
import time

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError,
                             KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spec  # noqa: E402

STEP_SECONDS = 60


def conf(bootstrap, **extra):
    c = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000}
    if os.environ.get("PINLOG_CLIENT_DEBUG"):
        c["debug"] = os.environ["PINLOG_CLIENT_DEBUG"]
    c.update(extra)
    return c


def create(bootstrap, partitions, topics):
    admin = AdminClient(conf(bootstrap))
    futures = admin.create_topics(
        [NewTopic(t, num_partitions=int(partitions), replication_factor=1) for t in topics],
        request_timeout=20)
    for topic, f in futures.items():
        f.result(timeout=30)  # raises KafkaException on a failed creation
        print("created %s" % topic, flush=True)


def produce(bootstrap, n, prefix, codecs):
    n = int(n)
    for codec in codecs:
        topic = "%s-%s" % (prefix, codec)
        deadline = spec.Deadline(STEP_SECONDS)
        # Idempotence on: InitProducerId, sequence numbers, acks=all.
        p = Producer(conf(bootstrap, **{
            "enable.idempotence": True,
            "compression.type": codec,
            "linger.ms": 5,
            "message.timeout.ms": 30000,
        }))
        errors = []
        delivered = [0]

        def on_delivery(err, msg):
            if err is not None:
                errors.append("%s [%s]: %s" % (msg.topic(), msg.partition(), err))
            else:
                delivered[0] += 1

        for seq in range(n):
            while True:
                try:
                    p.produce(topic, key=spec.key(seq), value=spec.value(codec, seq),
                              headers=spec.headers(codec, seq), on_delivery=on_delivery)
                    break
                except BufferError:  # local queue full: let deliveries drain it
                    p.poll(0.05)
                    if deadline.expired():
                        spec.die("%s: local queue stayed full" % topic)
            p.poll(0)
        left = p.flush(deadline.left())
        if left or errors:
            spec.die("%s: %d records undelivered, %d delivery errors, first: %s"
                     % (topic, left, len(errors), errors[:5]))
        print("produced %d to %s" % (delivered[0], topic), flush=True)


def consume(bootstrap, topics):
    # group.id is required by the client but unused: assign() needs no group
    # coordinator and nothing is committed.
    c = Consumer(conf(bootstrap, **{
        "group.id": "pinlog-test-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
    }))
    deadline = spec.Deadline(STEP_SECONDS)
    out = []
    try:
        md = c.list_topics(timeout=20)
        want = {}  # (topic, partition) -> high watermark at start
        for t in topics:
            tm = md.topics.get(t)
            if tm is None or tm.error is not None:
                spec.die("metadata for %s: %s" % (t, tm.error if tm else "missing"))
            for pid in tm.partitions:
                _, high = c.get_watermark_offsets(TopicPartition(t, pid), timeout=20)
                want[(t, pid)] = high
        c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for (t, p) in want])
        pending = {tp for tp, high in want.items() if high > 0}
        while pending:
            if deadline.expired():
                spec.die("consume timed out; partitions not read to the end: %s"
                         % sorted(pending))
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                spec.die("consume error: %s" % m.error())
            out.append(spec.line(m.topic(), m.partition(), m.offset(), m.key(), m.value(),
                                 m.headers()))
            if m.offset() + 1 >= want[(m.topic(), m.partition())]:
                pending.discard((m.topic(), m.partition()))
    finally:
        c.close()
    sys.stdout.write("".join(l + "\n" for l in out))


def metadata(bootstrap, topic):
    # A producer handle: librdkafka asks for auto-creation on its behalf
    # (allow.auto.create.topics defaults to true for producers).
    p = Producer(conf(bootstrap))
    md = p.list_topics(topic=topic, timeout=20)
    for b in md.brokers.values():
        print("broker %d %s:%d" % (b.id, b.host, b.port))
    tm = md.topics.get(topic)
    err = tm.error.name() if tm is not None and tm.error is not None else "none"
    print("topic %s error=%s partitions=%d" % (topic, err, len(tm.partitions) if tm else 0),
          flush=True)


def unknown_topic(bootstrap, topic):
    """With auto-creation disabled, both the metadata answer and a produce
    must say UNKNOWN_TOPIC_OR_PARTITION. The producer turns that answer into a
    delivery error after topic.metadata.propagation.max.ms (shortened to 2 s);
    a broker that ignores the topic instead leaves the record waiting until
    message.timeout.ms (20 s) and the error is _MSG_TIMED_OUT."""
    start = time.monotonic()
    p = Producer(conf(bootstrap, **{
        "topic.metadata.propagation.max.ms": 2000,
        "message.timeout.ms": 20000,
    }))
    md = p.list_topics(topic=topic, timeout=10)
    tm = md.topics.get(topic)
    err = tm.error.name() if tm is not None and tm.error is not None else "none"
    print("metadata error=%s after %.1fs" % (err, time.monotonic() - start), flush=True)
    result = []
    start = time.monotonic()
    p.produce(topic, key=b"k", value=b"v",
              on_delivery=lambda e, m: result.append(e.name() if e else "none"))
    p.flush(30)
    print("produce error=%s after %.1fs" % (result[0] if result else "no-report",
                                            time.monotonic() - start), flush=True)


def main(argv):
    if len(argv) < 3:
        spec.die(__doc__)
    cmd, bootstrap, rest = argv[1], argv[2], argv[3:]
    try:
        if cmd == "create":
            create(bootstrap, rest[0], rest[1:])
        elif cmd == "produce":
            produce(bootstrap, rest[0], rest[1], rest[2:])
        elif cmd == "consume":
            consume(bootstrap, rest)
        elif cmd == "metadata":
            metadata(bootstrap, rest[0])
        elif cmd == "unknown-topic":
            unknown_topic(bootstrap, rest[0])
        else:
            spec.die("unknown command %r\n%s" % (cmd, __doc__))
    except KafkaException as e:
        spec.die("%s failed: %s" % (cmd, e))


if __name__ == "__main__":
    main(sys.argv)
