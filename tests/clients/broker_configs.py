"""Dynamic broker settings and live topic settings through confluent-kafka's
AdminClient (librdkafka): IncrementalAlterConfigs on the broker resource
and on a topic, DescribeConfigs sources, and the effect on the log.

Usage: broker_configs.py BOOTSTRAP TOPIC STEP
  STEP "set-broker":   log.segment.bytes=2048 and log.retention.ms=3600000
                       as cluster-wide dynamic defaults; refuse a static one
  STEP "describe":     print the topic's segment.bytes / retention.ms / cleanup.policy
                       with sources, as JSON
  STEP "produce N":    produce N keyed records of ~100 bytes, acks=all
  STEP "set-topic":    cleanup.policy=compact on the topic, live
  STEP "unset-broker": delete log.segment.bytes
Prints one JSON line per step; exits non-zero with the reason on failure.
"""
import json
import sys

from confluent_kafka import Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                   ConfigResource, ResourceType)

TIMEOUT_S = 30
# librdkafka names a broker resource by node id (pinlog's default node.id);
# pinlog stores the change as the cluster-wide default, as "" would.
BROKER_ID = "1"


def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap})


def alter(a, resource):
    for res, fut in a.incremental_alter_configs([resource]).items():
        fut.result(timeout=TIMEOUT_S)


def describe(a, rtype, name, keys):
    res = ConfigResource(rtype, name)
    out = {}
    for _, fut in a.describe_configs([res]).items():
        for k, e in fut.result(timeout=TIMEOUT_S).items():
            if k in keys:
                out[k] = {"value": e.value, "source": e.source, "read_only": e.is_read_only,
                          "synonyms": sorted(e.synonyms)}
    return out


def main():
    bootstrap, topic, step = sys.argv[1], sys.argv[2], sys.argv[3]
    a = admin(bootstrap)
    if step == "set-broker":
        alter(a, ConfigResource(ResourceType.BROKER, BROKER_ID, incremental_configs=[
            ConfigEntry("log.segment.bytes", "2048",
                        incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("log.retention.ms", "3600000",
                        incremental_operation=AlterConfigOpType.SET),
        ]))
        refused = None
        try:
            alter(a, ConfigResource(ResourceType.BROKER, BROKER_ID, incremental_configs=[
                ConfigEntry("num.partitions", "7", incremental_operation=AlterConfigOpType.SET)]))
        except Exception as e:  # the broker must refuse it with a reason
            refused = str(e)
        bad_value = None
        try:
            alter(a, ConfigResource(ResourceType.BROKER, BROKER_ID, incremental_configs=[
                ConfigEntry("log.retention.ms", "-5", incremental_operation=AlterConfigOpType.SET)]))
        except Exception as e:
            bad_value = str(e)
        broker = describe(a, ResourceType.BROKER, BROKER_ID, {"log.segment.bytes", "log.retention.ms"})
        print(json.dumps({"refused": refused, "bad_value": bad_value, "broker": broker}))
    elif step == "describe":
        print(json.dumps(describe(a, ResourceType.TOPIC, topic,
                                  {"segment.bytes", "retention.ms", "cleanup.policy",
                                   "segment.ms"})))
    elif step.startswith("produce"):
        n = int(step.split()[1])
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                      "batch.num.messages": 1})
        for i in range(n):
            p.produce(topic, key=b"key-%d" % (i % 10), value=b"v" * 100)
            p.poll(0)
        left = p.flush(TIMEOUT_S)
        print(json.dumps({"produced": n, "unflushed": left}))
    elif step == "set-topic":
        alter(a, ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
            ConfigEntry("cleanup.policy", "compact",
                        incremental_operation=AlterConfigOpType.SET)]))
        print(json.dumps({"ok": True}))
    elif step == "unset-broker":
        alter(a, ConfigResource(ResourceType.BROKER, BROKER_ID, incremental_configs=[
            ConfigEntry("log.segment.bytes", None,
                        incremental_operation=AlterConfigOpType.DELETE)]))
        print(json.dumps({"ok": True}))
    else:
        sys.exit("unknown step " + step)


if __name__ == "__main__":
    main()
