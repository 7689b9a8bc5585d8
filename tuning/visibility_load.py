"""Background load for tuning/admin-visibility.sh: confluent-kafka produces
RATE records per second of 512 bytes to TOPIC with acks=all, and a group
consumer reads them, until SECONDS have passed or a SIGTERM came. Prints the records
acknowledged and consumed. Usage: visibility_load.py BOOTSTRAP TOPIC RATE SECONDS
"""

import signal
import sys
import threading
import time

from confluent_kafka import Consumer, Producer

VALUE = b"v" * 512


def consume(bootstrap, topic, stop, counts):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "visibility-load",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    while not stop.is_set():
        for m in c.consume(num_messages=1000, timeout=0.2):
            if not m.error():
                counts["consumed"] += 1
    c.close()


def main():
    bootstrap, topic, rate, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    counts = {"acked": 0, "consumed": 0}
    stop = threading.Event()
    reader = threading.Thread(target=consume, args=(bootstrap, topic, stop, counts))
    reader.start()

    def acked(err, _msg):
        if err is None:
            counts["acked"] += 1

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    started = time.monotonic()
    sent = 0
    # The script stops the load with SIGTERM once the probe is done.
    ended = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: ended.set())
    while time.monotonic() - started < seconds and not ended.is_set():
        # Paced in 10 ms steps.
        due = int((time.monotonic() - started) * rate)
        while sent < due:
            try:
                p.produce(topic, VALUE, on_delivery=acked)
                sent += 1
            except BufferError:
                break
        p.poll(0.01)
    p.flush(30)
    stop.set()
    reader.join(30)
    print("acked %d consumed %d" % (counts["acked"], counts["consumed"]))


if __name__ == "__main__":
    main()
