"""A consumer-group member for tests/broker/cli.rs, on kafka-python.

Joins GROUP as CLIENT_ID, consumes exactly COUNT records of TOPIC from the
earliest offset, commits, prints "ready <n>", then stays in the group until
a line (or end of file) arrives on stdin, leaves the group, and prints
"closed". Every wait is bounded, so a broken broker fails the test instead
of hanging it.
"""

import sys
import time

from kafka import KafkaConsumer

# Bound on consuming COUNT records.
CONSUME_DEADLINE_S = 30


def main():
    bootstrap, topic, group, client_id, count = sys.argv[1:6]
    count = int(count)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=client_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    n = 0
    deadline = time.time() + CONSUME_DEADLINE_S
    while n < count and time.time() < deadline:
        for records in consumer.poll(timeout_ms=500, max_records=count - n).values():
            n += len(records)
    consumer.commit()
    print("ready", n, flush=True)
    sys.stdin.readline()
    consumer.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main()
