"""confluent-kafka or kafka-python over TLS, driven by tests/security.rs.
Usage:

  security_client.py CLIENT SETTINGS create  TOPIC PARTITIONS  # then prints the brokers
  security_client.py CLIENT SETTINGS produce TOPIC N
  security_client.py CLIENT SETTINGS consume TOPIC             # to the end offsets

CLIENT is `confluent` or `kafka-python`. SETTINGS is a JSON object naming
`bootstrap`, `ca` (the PEM file of the CA that signed the broker's
certificate) and, for mutual TLS, `cert` and `key` (the client's PEM
certificate and unencrypted key); each client gets them under its own
names.

Record `seq` has key key-<seq % 7> and value value-<seq as 6 digits>; a
consumed record is printed as `topic partition offset key value`,
tab-separated (java/SecurityCheck.java prints the same). The producers
use acks=all. Every step has a time limit (STEP_SECONDS).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spec  # noqa: E402

STEP_SECONDS = 60
KEYS = 7


def key(seq):
    return "key-%d" % (seq % KEYS)


def value(seq):
    return "value-%06d" % seq


def line(topic, partition, offset, k, v):
    text = lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)
    return "\t".join([topic, str(partition), str(offset), text(k), text(v)])


class Confluent:
    def __init__(self, s):
        self.conf = {
            "bootstrap.servers": s["bootstrap"],
            "security.protocol": "SSL",
            "ssl.ca.location": s["ca"],
            "socket.timeout.ms": 10000,
        }
        if "cert" in s:
            self.conf["ssl.certificate.location"] = s["cert"]
            self.conf["ssl.key.location"] = s["key"]
        if os.environ.get("PINLOG_CLIENT_DEBUG"):
            self.conf["debug"] = os.environ["PINLOG_CLIENT_DEBUG"]

    def create(self, topic, partitions):
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient(dict(self.conf))
        futures = admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                                replication_factor=1)], request_timeout=20)
        futures[topic].result(timeout=30)
        print("created %s" % topic, flush=True)
        md = admin.list_topics(timeout=20)
        for b in md.brokers.values():
            print("broker %d %s:%d" % (b.id, b.host, b.port), flush=True)

    def produce(self, topic, n):
        from confluent_kafka import Producer
        p = Producer(dict(self.conf, **{"enable.idempotence": True, "linger.ms": 5,
                                         "message.timeout.ms": 30000}))
        errors = []
        for seq in range(n):
            p.produce(topic, key=key(seq), value=value(seq),
                      on_delivery=lambda err, msg: err and errors.append(str(err)))
            p.poll(0)
        left = p.flush(STEP_SECONDS)
        if left or errors:
            spec.die("%s: %d records undelivered, %d delivery errors, first: %s"
                     % (topic, left, len(errors), errors[:5]))
        print("produced %d to %s" % (n, topic), flush=True)

    def consume(self, topic):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
        c = Consumer(dict(self.conf, **{"group.id": "pinlog-test-unused",
                                         "enable.auto.commit": False}))
        deadline = spec.Deadline(STEP_SECONDS)
        out = []
        try:
            tm = c.list_topics(topic=topic, timeout=20).topics.get(topic)
            if tm is None or tm.error is not None:
                spec.die("metadata for %s: %s" % (topic, tm.error if tm else "missing"))
            want = {}
            for pid in tm.partitions:
                _, high = c.get_watermark_offsets(TopicPartition(topic, pid), timeout=20)
                want[pid] = high
            c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in want])
            pending = {p for p, high in want.items() if high > 0}
            while pending:
                if deadline.expired():
                    spec.die("consume timed out; partitions not read to the end: %s"
                             % sorted(pending))
                m = c.poll(1.0)
                if m is None:
                    continue
                if m.error():
                    spec.die("consume error: %s" % m.error())
                out.append(line(m.topic(), m.partition(), m.offset(), m.key(), m.value()))
                if m.offset() + 1 >= want[m.partition()]:
                    pending.discard(m.partition())
        finally:
            c.close()
        sys.stdout.write("".join(l + "\n" for l in out))


class KafkaPython:
    def __init__(self, s):
        self.conf = {
            "bootstrap_servers": s["bootstrap"],
            "security_protocol": "SSL",
            "ssl_cafile": s["ca"],
            "request_timeout_ms": 20000,
            "client_id": "pinlog-test-kafka-python",
        }
        if "cert" in s:
            self.conf["ssl_certfile"] = s["cert"]
            self.conf["ssl_keyfile"] = s["key"]

    def create(self, topic, partitions):
        from kafka.admin import KafkaAdminClient, NewTopic
        admin = KafkaAdminClient(**self.conf)
        try:
            resp = admin.create_topics([NewTopic(topic, partitions, 1)], timeout_ms=20000)
            results = resp.get("topics", []) if isinstance(resp, dict) else []
            failed = [r for r in results if r.get("error_code")]
            if failed:
                spec.die("create_topics failed: %s" % failed)
            print("created %s" % topic, flush=True)
            for b in admin.describe_cluster()["brokers"]:
                print("broker %d %s:%d" % (b["broker_id"], b["host"], b["port"]), flush=True)
        finally:
            admin.close()

    def produce(self, topic, n):
        from kafka import KafkaProducer
        p = KafkaProducer(acks="all", linger_ms=5, max_block_ms=20000, **self.conf)
        futures = [p.send(topic, key=key(seq).encode(), value=value(seq).encode())
                   for seq in range(n)]
        p.flush(timeout=STEP_SECONDS)
        errors = [repr(f.exception) if f.is_done else "not done"
                  for f in futures if not f.is_done or f.exception is not None]
        p.close(timeout=10)
        if errors:
            spec.die("%s: %d of %d records failed, first: %s" % (topic, len(errors), n, errors[:5]))
        print("produced %d to %s" % (n, topic), flush=True)

    def consume(self, topic):
        from kafka import KafkaConsumer, TopicPartition
        c = KafkaConsumer(group_id=None, enable_auto_commit=False, **self.conf)
        deadline = spec.Deadline(STEP_SECONDS)
        out = []
        try:
            parts = None
            while not parts:  # metadata for the topic arrives asynchronously
                if deadline.expired():
                    spec.die("no partitions known for %s" % topic)
                parts = c.partitions_for_topic(topic)
            tps = [TopicPartition(topic, p) for p in sorted(parts)]
            c.assign(tps)
            c.seek_to_beginning()
            end = c.end_offsets(tps)
            pending = {tp for tp in tps if end[tp] > 0}
            while pending:
                if deadline.expired():
                    spec.die("consume timed out; partitions not read to the end: %s"
                             % sorted(pending))
                for tp, records in c.poll(timeout_ms=1000).items():
                    for m in records:
                        out.append(line(m.topic, m.partition, m.offset, m.key, m.value))
                        if m.offset + 1 >= end[tp]:
                            pending.discard(tp)
        finally:
            c.close()
        sys.stdout.write("".join(l + "\n" for l in out))


def main(argv):
    if len(argv) < 5:
        spec.die(__doc__)
    client, settings, cmd, topic = argv[1], json.loads(argv[2]), argv[3], argv[4]
    if client == "confluent":
        c = Confluent(settings)
    elif client == "kafka-python":
        c = KafkaPython(settings)
    else:
        spec.die("unknown client %r\n%s" % (client, __doc__))
    try:
        if cmd == "create":
            c.create(topic, int(argv[5]))
        elif cmd == "produce":
            c.produce(topic, int(argv[5]))
        elif cmd == "consume":
            c.consume(topic)
        else:
            spec.die("unknown command %r\n%s" % (cmd, __doc__))
    except Exception as e:  # noqa: BLE001 - any client error fails the step
        spec.die("%s %s failed: %r" % (client, cmd, e))


if __name__ == "__main__":
    main(sys.argv)
