"""Produces one record every 5 ms to one partition with acks=all and
idempotence (confluent-kafka, librdkafka's defaults otherwise) for SECONDS,
and prints "ACK <produced unix ms> <acknowledged unix ms>" per delivered
record, for tuning/partition-failover.sh.

  failover_probe.py BOOTSTRAP TOPIC PARTITION SECONDS
"""

import sys
import time

from confluent_kafka import Producer


def main(bootstrap, topic, partition, seconds):
    p = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 0,
    })

    def report(err, msg, sent_ms):
        if err is None:
            print("ACK %d %d" % (sent_ms, int(time.time() * 1000)), flush=True)
        elif err.fatal():
            print("FATAL %s" % err.name(), flush=True)

    end = time.time() + float(seconds)
    while time.time() < end:
        sent = int(time.time() * 1000)
        p.produce(topic, value=b"x", partition=int(partition),
                  on_delivery=lambda err, msg, s=sent: report(err, msg, s))
        p.poll(0.005)
    p.flush(60)


if __name__ == "__main__":
    main(*sys.argv[1:5])
