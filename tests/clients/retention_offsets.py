"""kafka-python steps for tests/broker/retention_and_offsets.rs.

Usage: retention_offsets.py BOOTSTRAP STEP ARGS...
  produce TOPIC N             N records of 200 bytes to partition 0, acks=all
  commit GROUP TOPIC FROM TO  commit offsets FROM..TO-1 one by one, from
                              outside the group (generation -1), for partition 0
  committed GROUP TOPIC       print the committed offset of partition 0
  consume GROUP TOPIC RESET   join GROUP, read partition 0 from the committed
                              offset with auto_offset_reset=RESET and print the
                              first offset read (or the error)
Prints one JSON line; exits non-zero with the reason on failure.
"""
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import OffsetOutOfRangeError
from kafka.structs import OffsetAndMetadata

STEP_TIMEOUT_S = 30


def main():
    bootstrap, step, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if step == "produce":
        topic, n = args[0], int(args[1])
        p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
        for i in range(n):
            p.send(topic, key=b"k%d" % i, value=b"v" * 200, partition=0)
            if i % 10 == 9:
                p.flush(STEP_TIMEOUT_S)
        p.flush(STEP_TIMEOUT_S)
        print(json.dumps({"produced": n}))
    elif step == "commit":
        group, topic, lo, hi = args[0], args[1], int(args[2]), int(args[3])
        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                          enable_auto_commit=False)
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        for off in range(lo, hi):
            c.commit({tp: OffsetAndMetadata(off, "", -1)})
        c.close(autocommit=False)
        print(json.dumps({"committed": hi - 1}))
    elif step == "committed":
        group, topic = args[0], args[1]
        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                          enable_auto_commit=False)
        print(json.dumps({"committed": c.committed(TopicPartition(topic, 0))}))
        c.close(autocommit=False)
    elif step == "consume":
        group, topic, reset = args[0], args[1], args[2]
        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                          enable_auto_commit=False, auto_offset_reset=reset)
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        deadline = time.time() + STEP_TIMEOUT_S
        out = {"first": None, "error": None}
        while time.time() < deadline and out["first"] is None and out["error"] is None:
            try:
                for recs in c.poll(timeout_ms=500).values():
                    if recs:
                        out["first"] = recs[0].offset
                        break
            except OffsetOutOfRangeError as e:
                out["error"] = "OffsetOutOfRange"
        c.close(autocommit=False)
        print(json.dumps(out))
    else:
        sys.exit("unknown step " + step)


if __name__ == "__main__":
    main()
