"""A Python client over an authenticated listener, driven by tests/broker/sasl.rs:

  sasl_client.py CLIENT BOOTSTRAP TOPIC N SETTINGS_JSON

CLIENT is confluent (confluent-kafka) or kafka-python; SETTINGS_JSON holds
the client's own security settings (librdkafka names for confluent,
KafkaProducer keyword arguments for kafka-python). Produces N records, then
consumes the topic from the beginning and prints "consumed <count>". Every
step has a time limit (STEP_SECONDS).
"""

import json
import sys
import time

STEP_SECONDS = 60


def confluent(bootstrap, topic, n, settings):
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    conf = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000}
    conf.update(settings)
    producer = Producer(conf)
    for i in range(n):
        producer.produce(topic, key=f"k{i}", value=f"v{i}")
    left = producer.flush(STEP_SECONDS)
    if left:
        sys.exit(f"{left} records not delivered")
    consumer = Consumer(dict(conf, **{"group.id": "sasl-check", "enable.auto.commit": False}))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    consumed = 0
    deadline = time.time() + STEP_SECONDS
    while consumed < n and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is None or m.error():
            continue
        consumed += 1
    consumer.close()
    print(f"consumed {consumed}")


def kafka_python(bootstrap, topic, n, settings):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=bootstrap, **settings)
    for i in range(n):
        producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    producer.flush(STEP_SECONDS)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **settings)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    consumed = 0
    deadline = time.time() + STEP_SECONDS
    while consumed < n and time.time() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            consumed += len(records)
    consumer.close()
    print(f"consumed {consumed}")


if __name__ == "__main__":
    client, bootstrap, topic, n, settings = sys.argv[1:6]
    {"confluent": confluent, "kafka-python": kafka_python}[client](
        bootstrap, topic, int(n), json.loads(settings)
    )
