"""kafka-python's admin calls DeleteRecords and DescribeLogDirs against a
broker, driven by tests/broker/admin_apis.rs. Usage:

  kafka_python_admin.py create   BOOTSTRAP TOPIC PARTITIONS SEGMENT_BYTES
  kafka_python_admin.py produce  BOOTSTRAP TOPIC PARTITIONS N
  kafka_python_admin.py delete   BOOTSTRAP TOPIC PARTITION OFFSET
  kafka_python_admin.py offsets  BOOTSTRAP TOPIC PARTITION
  kafka_python_admin.py consume  BOOTSTRAP TOPIC PARTITION
  kafka_python_admin.py logdirs  BOOTSTRAP TOPIC...

`produce` sends N records to each partition, one record per batch (so that
small segments roll often); record `seq` of partition `p` has the value
`p:<seq as 6 digits>`. Every step prints tab-separated lines:

  delete   low_watermark <n>  |  error <kafka-python error class>
  offsets  earliest <n>, then latest <n>           (ListOffsets)
  consume  <offset> <value>, one per record        (reads from offset 0 with
                                                    auto_offset_reset=earliest)
  logdirs  dir <path> <error> <total bytes> <usable bytes>, then
           partition <topic> <index> <size> <offset lag> <future?>

Every step has a time limit (STEP_SECONDS); set PINLOG_CLIENT_DEBUG=1 for
kafka-python's debug log on stderr.
"""

import logging
import os
import sys

import kafka.errors as Errors
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spec  # noqa: E402

STEP_SECONDS = 60
COMMON = {"request_timeout_ms": 20000, "client_id": "pinlog-test-admin"}


def admin(bootstrap):
    return KafkaAdminClient(bootstrap_servers=bootstrap, **COMMON)


def create(bootstrap, topic, partitions, segment_bytes):
    a = admin(bootstrap)
    try:
        resp = a.create_topics(
            [NewTopic(topic, int(partitions), 1, topic_configs={"segment.bytes": segment_bytes})],
            timeout_ms=20000)
        results = resp.get("topics", []) if isinstance(resp, dict) else []
        failed = [r for r in results if r.get("error_code")]
        if failed:
            spec.die("create_topics failed: %s" % failed)
    finally:
        a.close()


def produce(bootstrap, topic, partitions, n):
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0, max_block_ms=20000,
                      **COMMON)
    deadline = spec.Deadline(STEP_SECONDS)
    try:
        for partition in range(int(partitions)):
            for seq in range(int(n)):
                if deadline.expired():
                    spec.die("produce timed out at partition %d record %d" % (partition, seq))
                # Waiting for each record keeps one record per batch.
                p.send(topic, value=("%d:%06d" % (partition, seq)).encode(),
                       partition=partition).get(timeout=deadline.left())
    finally:
        p.close(timeout=10)


def delete(bootstrap, topic, partition, offset):
    a = admin(bootstrap)
    tp = TopicPartition(topic, int(partition))
    try:
        result = a.delete_records({tp: int(offset)}, timeout_ms=20000)
        print("low_watermark\t%d" % result[tp]["low_watermark"], flush=True)
    except Errors.KafkaError as e:
        print("error\t%s" % type(e).__name__, flush=True)
    finally:
        a.close()


def offsets(bootstrap, topic, partition):
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, **COMMON)
    tp = TopicPartition(topic, int(partition))
    try:
        print("earliest\t%d" % c.beginning_offsets([tp])[tp], flush=True)
        print("latest\t%d" % c.end_offsets([tp])[tp], flush=True)
    finally:
        c.close()


def consume(bootstrap, topic, partition):
    # No group: assign() and seek to offset 0, which DeleteRecords made out
    # of range, so the consumer must reset to the earliest offset.
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      auto_offset_reset="earliest", **COMMON)
    tp = TopicPartition(topic, int(partition))
    deadline = spec.Deadline(STEP_SECONDS)
    out = []
    try:
        c.assign([tp])
        end = c.end_offsets([tp])[tp]
        c.seek(tp, 0)
        done = end == 0
        while not done:
            if deadline.expired():
                spec.die("consume timed out; read %d records, end offset %d" % (len(out), end))
            for records in c.poll(timeout_ms=1000).values():
                for m in records:
                    out.append("%d\t%s" % (m.offset, m.value.decode()))
                    done = done or m.offset + 1 >= end
    finally:
        c.close()
    sys.stdout.write("".join(line + "\n" for line in out))


def logdirs(bootstrap, topics):
    a = admin(bootstrap)
    try:
        # A topic list: kafka-python asks for all of each topic's partitions.
        for broker in a.describe_log_dirs(topic_partitions=list(topics)):
            for d in broker["log_dirs"]:
                print("dir\t%s\t%d\t%d\t%d" % (d["log_dir"], d["error_code"],
                                              d.get("total_bytes", -1),
                                              d.get("usable_bytes", -1)))
                for t in d["topics"]:
                    for p in t["partitions"]:
                        print("partition\t%s\t%d\t%d\t%d\t%s" % (
                            t["name"], p["partition_index"], p["partition_size"],
                            p["offset_lag"], p["is_future_key"]))
        sys.stdout.flush()
    finally:
        a.close()


def main(argv):
    if len(argv) < 4:
        spec.die(__doc__)
    if os.environ.get("PINLOG_CLIENT_DEBUG"):
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    cmd, bootstrap, rest = argv[1], argv[2], argv[3:]
    steps = {"create": create, "produce": produce, "delete": delete, "offsets": offsets,
             "consume": consume}
    if cmd == "logdirs":
        logdirs(bootstrap, rest)
    elif cmd in steps:
        steps[cmd](bootstrap, *rest)
    else:
        spec.die("unknown step %r\n%s" % (cmd, __doc__))


if __name__ == "__main__":
    main(sys.argv)
