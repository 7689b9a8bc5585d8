"""confluent-kafka against a replicated cluster, driven by tests/clusters/replication.rs.

  replication_client.py produce BOOTSTRAP TOPIC SECONDS [PRODUCER-SETTING=VALUE...]
      Produces numbered records ("0", "1", ...) to partition 0 of TOPIC for
      SECONDS with acks=all and idempotence (librdkafka's defaults
      otherwise), then flushes. Prints one line per outcome:
        ACK <n> <offset>
        ERR <n> <error name> retriable|fatal
      and "DONE <acked> <failed>" last. Progress goes to stderr.
  replication_client.py consume BOOTSTRAP TOPIC
      Prints every record value of partition 0, from the start to the
      high watermark, one per line, then "END <count>".
  replication_client.py group BOOTSTRAP TOPIC GROUP TOTAL
      Consumes TOPIC in consumer group GROUP (librdkafka's defaults, manual
      commits) until it has seen TOTAL records, committing synchronously
      every 20 records. Prints "COMMITTED <offset>" after each commit that
      succeeded, "COMMIT-ERR <error name>" after one that failed, and
      "CONSUMED <count>" last.
  replication_client.py committed BOOTSTRAP TOPIC GROUP
      Prints the group's committed offset of partition 0: "OFFSET <n>".
  replication_client.py once BOOTSTRAP TOPIC [PRODUCER-SETTING=VALUE...]
      Produces one record with acks=all and no retries; prints "ACK <offset>"
      or "ERR <error name>". Its value is "once", or what the pseudo-setting
      record.value=VALUE says (it is not passed to the producer).
  replication_client.py delete-records BOOTSTRAP TOPIC OFFSET
      Deletes the records of partition 0 before OFFSET with the admin
      client's DeleteRecords; prints "LOW <new log start>" or
      "ERR <error name>".

Every step has a time limit; the scripts never wait forever.
"""

import sys
import time

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError,
                             KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient

STEP_SECONDS = 90


def settings(pairs):
    out = {}
    for p in pairs:
        k, v = p.split("=", 1)
        out[k] = v
    return out


def produce(bootstrap, topic, seconds, extra):
    conf = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
    }
    conf.update(settings(extra))
    p = Producer(conf)
    acked = 0
    failed = 0

    def report(err, msg):
        nonlocal acked, failed
        n = msg.value().decode()
        if err is None:
            acked += 1
            print("ACK %s %d" % (n, msg.offset()), flush=True)
        else:
            failed += 1
            kind = "retriable" if err.retriable() else "fatal"
            if err.fatal():
                kind = "fatal"
            print("ERR %s %s %s" % (n, err.name(), kind), flush=True)

    end = time.time() + float(seconds)
    n = 0
    last_progress = time.time()
    while time.time() < end:
        try:
            p.produce(topic, value=str(n).encode(), partition=0, on_delivery=report)
            n += 1
        except BufferError:
            p.poll(0.05)
            continue
        p.poll(0)
        # About 500 records a second: enough to be mid-flight at the kill.
        time.sleep(0.002)
        if time.time() - last_progress > 1:
            last_progress = time.time()
            print("produced %d, acked %d" % (n, acked), file=sys.stderr, flush=True)
    left = p.flush(STEP_SECONDS)
    print("DONE %d %d %d" % (acked, failed, left), flush=True)


def consume(bootstrap, topic):
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "replication-check-%d" % time.time_ns(),
        "enable.auto.commit": False,
        "enable.partition.eof": True,
    })
    tp = TopicPartition(topic, 0, OFFSET_BEGINNING)
    _, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    c.assign([tp])
    count = 0
    deadline = time.time() + STEP_SECONDS
    position = 0
    while position < high and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                if m.offset() >= high:
                    break
                continue
            print("CONSUME-ERR %s" % m.error().name(), flush=True)
            continue
        print(m.value().decode(), flush=True)
        count += 1
        position = m.offset() + 1
    c.close()
    print("END %d %d" % (count, high), flush=True)


def group(bootstrap, topic, group_id, total):
    total = int(total)
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    c.subscribe([topic])
    seen = 0
    deadline = time.time() + STEP_SECONDS
    while seen < total and time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        seen += 1
        # Slow enough that the coordinator dies mid-way.
        time.sleep(0.003)
        if seen % 20 == 0 or seen == total:
            try:
                parts = c.commit(message=m, asynchronous=False)
                print("COMMITTED %d" % parts[0].offset, flush=True)
            except KafkaException as e:
                print("COMMIT-ERR %s" % e.args[0].name(), flush=True)
    c.close()
    print("CONSUMED %d" % seen, flush=True)


def committed(bootstrap, topic, group_id):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group_id})
    parts = c.committed([TopicPartition(topic, 0)], timeout=30)
    c.close()
    print("OFFSET %d" % parts[0].offset, flush=True)


def once(bootstrap, topic, extra):
    conf = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "retries": 0,
        "message.timeout.ms": 10000,
    }
    conf.update(settings(extra))
    value = conf.pop("record.value", "once").encode()
    partition = int(conf.pop("record.partition", "0"))
    p = Producer(conf)
    out = []
    p.produce(topic, value=value, partition=partition,
              on_delivery=lambda err, msg: out.append((err, msg)))
    p.flush(30)
    if not out:
        print("ERR NO_REPORT", flush=True)
    elif out[0][0] is None:
        print("ACK %d" % out[0][1].offset(), flush=True)
    else:
        print("ERR %s" % out[0][0].name(), flush=True)


def delete_records(bootstrap, topic, offset):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records(
        [TopicPartition(topic, 0, int(offset))],
        request_timeout=STEP_SECONDS)
    for f in futures.values():
        try:
            print("LOW %d" % f.result(timeout=STEP_SECONDS).low_watermark,
                  flush=True)
        except KafkaException as e:
            print("ERR %s" % e.args[0].name(), flush=True)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "produce":
        produce(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif cmd == "consume":
        consume(sys.argv[2], sys.argv[3])
    elif cmd == "group":
        group(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif cmd == "committed":
        committed(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "once":
        once(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif cmd == "delete-records":
        delete_records(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit("unknown command %s" % cmd)
