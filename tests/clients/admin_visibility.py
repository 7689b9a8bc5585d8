"""kafka-python's admin client against the admin path, driven by
tests/clusters/admin_cluster.rs. Usage:

  admin_visibility.py loop        BOOTSTRAP ROUNDS PREFIX  create, check, delete, check, while producing
  admin_visibility.py assignments BOOTSTRAP BROKERS        manual replica assignments and their refusals
  admin_visibility.py duplicates  BOOTSTRAP                a topic, or a config resource, named twice
                                                           in one request
  admin_visibility.py groups      BOOTSTRAP TOPIC GROUPS   each of GROUPS (comma-separated) consumes
                                                           TOPIC's first record and commits

BOOTSTRAP is one broker: the admin client sends its admin requests there (in
pinlog every broker names itself the controller), and each check asks that
same broker for Metadata right after the answer, so it proves that the
broker that answered already shows the change. BROKERS is a comma-separated
list of broker ids. Every step prints one tab-separated line; a failed check
exits non-zero with what differed. Every step has a time limit
(STEP_SECONDS); PINLOG_CLIENT_DEBUG=1 turns on kafka-python's debug log.
"""

import os
import sys
import threading
import time

import kafka.errors as Errors
from kafka import KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.protocol.metadata import MetadataRequest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spec  # noqa: E402

STEP_SECONDS = 120
COMMON = {"request_timeout_ms": 30000, "client_id": "pinlog-test-admin-visibility"}
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUEST = 42
INVALID_REPLICA_ASSIGNMENT = 39


def admin(bootstrap):
    return KafkaAdminClient(bootstrap_servers=bootstrap, **COMMON)


def answering_node(a):
    """The broker the admin client sends admin requests to."""
    # kafka-python keeps the controller it sends admin requests to; it is
    # found from the bootstrap broker's Metadata, which in pinlog names the
    # broker itself.
    node = getattr(a, "_controller_id", None)
    if node is None or node < 0:
        spec.die("kafka-python did not record the broker it sent the admin request to")
    return node


def metadata_on(a, node, topic):
    """Metadata for `topic` from broker `node` alone: (error code, partitions
    as {index: leader})."""
    request = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
        allow_auto_topic_creation=False,
    )

    async def ask():
        return await a._manager.send(request, node_id=node)

    response = a._manager.run(ask).to_dict()
    for t in response["topics"]:
        if t["name"] == topic:
            return t["error_code"], {p["partition_index"]: p["leader_id"] for p in t["partitions"]}
    spec.die("broker %d's Metadata does not answer for %s: %r" % (node, topic, response))


def produce_in_background(bootstrap, topic, stop, counts):
    """acks=all records to `topic` until `stop` is set: load on the broker
    while the admin requests run."""
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, **COMMON)
    try:
        while not stop.is_set():
            futures = [p.send(topic, value=b"x" * 512) for _ in range(200)]
            for f in futures:
                f.get(timeout=30)
            counts["acked"] += len(futures)
    except Exception as e:  # reported by the main thread
        counts["error"] = repr(e)
    finally:
        p.close(timeout=10)


def loop(bootstrap, rounds, prefix):
    a = admin(bootstrap)
    deadline = spec.Deadline(STEP_SECONDS)
    load = prefix + "-load"
    a.create_topics({load: {"num_partitions": 3}}, timeout_ms=30000)
    stop = threading.Event()
    counts = {"acked": 0, "error": None}
    producer = threading.Thread(
        target=produce_in_background, args=(bootstrap, load, stop, counts))
    producer.start()
    try:
        node = None
        for i in range(int(rounds)):
            if deadline.expired():
                spec.die("round %d: out of time" % i)
            topic = "%s-%d" % (prefix, i)
            a.create_topics({topic: {"num_partitions": 3}}, timeout_ms=30000)
            node = answering_node(a)
            code, partitions = metadata_on(a, node, topic)
            if code != 0 or sorted(partitions) != [0, 1, 2] or min(partitions.values()) < 0:
                spec.die("round %d: CreateTopics answered, but broker %d's Metadata says "
                         "error %d, partitions %r" % (i, node, code, partitions))
            a.delete_topics([topic], timeout_ms=30000)
            code, partitions = metadata_on(a, node, topic)
            if code != UNKNOWN_TOPIC_OR_PARTITION or partitions:
                spec.die("round %d: DeleteTopics answered, but broker %d's Metadata still says "
                         "error %d, partitions %r" % (i, node, code, partitions))
        if counts["error"]:
            spec.die("the background producer failed: %s" % counts["error"])
        print("rounds\t%s\tnode\t%s\tacked\t%d" % (rounds, node, counts["acked"]), flush=True)
    finally:
        stop.set()
        producer.join(timeout=60)
        a.close()


def create_errors(a, topics):
    """CreateTopics with the deprecated list form, which (unlike the dict
    form) can name a topic twice: {name: error code} for every result."""
    response = a.create_topics(topics, timeout_ms=30000, raise_errors=False)
    results = response["topics"] if isinstance(response, dict) else response.to_dict()["topics"]
    return [(r["name"], r["error_code"]) for r in results]


def assignments(bootstrap, brokers):
    ids = [int(b) for b in brokers.split(",")]
    a = admin(bootstrap)
    try:
        # Partition p on broker ids[p % n], one replica each; then, where
        # there are two brokers or more, two replicas each.
        plan = {p: [ids[p % len(ids)]] for p in range(len(ids) + 1)}
        a.create_topics({"manual-1": {"assignments": plan}}, timeout_ms=30000)
        node = answering_node(a)
        code, leaders = metadata_on(a, node, "manual-1")
        want = {p: r[0] for p, r in plan.items()}
        if code != 0 or leaders != want:
            spec.die("manual-1: assigned %r, Metadata says error %d, leaders %r" % (plan, code, leaders))
        grown = [[ids[-1]], [ids[0]]]
        count = len(plan) + len(grown)
        a.create_partitions({"manual-1": {"count": count, "assignments": grown}},
                            timeout_ms=30000)
        code, leaders = metadata_on(a, node, "manual-1")
        if leaders.get(len(plan)) != ids[-1] or leaders.get(len(plan) + 1) != ids[0]:
            spec.die("manual-1 grown with %r: Metadata says %r" % (grown, leaders))
        print("created\tmanual-1\t%d" % len(leaders), flush=True)
        refused = {
            "unknown-broker": {0: [max(ids) + 100]},
            "repeated-broker": {0: [ids[0], ids[0]]},
            "gap": {0: [ids[0]], 2: [ids[0]]},
        }
        if len(ids) > 1:
            refused["uneven"] = {0: [ids[0], ids[1]], 1: [ids[0]]}
        for name, plan in refused.items():
            response = a.create_topics({name: {"assignments": plan}}, timeout_ms=30000,
                                       raise_errors=False)
            code = response["topics"][0]["error_code"]
            if code != INVALID_REPLICA_ASSIGNMENT:
                spec.die("%s (%r): error %d, not INVALID_REPLICA_ASSIGNMENT" % (name, plan, code))
            print("refused\t%s\t%d" % (name, code), flush=True)
        try:
            a.create_partitions({"manual-1": {"count": count + 3, "assignments": [[ids[0]]]}},
                                timeout_ms=30000)
            spec.die("create_partitions with too few assignments was accepted")
        except Errors.InvalidReplicationAssignmentError:
            print("refused\ttoo-few-assignments\t%d" % INVALID_REPLICA_ASSIGNMENT, flush=True)
    finally:
        a.close()


def duplicates(bootstrap):
    a = admin(bootstrap)
    try:
        results = create_errors(a, [NewTopic("dup", 1, -1), NewTopic("single", 1, -1),
                                    NewTopic("dup", 2, -1)])
        if sorted(results) != [("dup", INVALID_REQUEST), ("single", 0)]:
            spec.die("CreateTopics with dup twice answered %r" % results)
        node = answering_node(a)
        code, _ = metadata_on(a, node, "dup")
        if code != UNKNOWN_TOPIC_OR_PARTITION:
            spec.die("dup was named twice but exists (Metadata error %d)" % code)
        code, _ = metadata_on(a, node, "single")
        if code != 0:
            spec.die("single was created, but Metadata says error %d" % code)
        for (name, code) in results:
            print("created\t%s\t%d" % (name, code), flush=True)
        # A config resource given twice: every entry refused, nothing
        # changed, with IncrementalAlterConfigs and with AlterConfigs.
        twice = [ConfigResource(ConfigResourceType.TOPIC, "single", configs={"retention.ms": v})
                 for v in ("1000", "2000")]
        for incremental in (True, False):
            answer = a.alter_configs(twice, incremental=incremental, raise_on_unknown=False)
            result = str(answer.get("topic", {}).get("single"))
            if "InvalidRequestError" not in result:
                spec.die("a topic's configs given twice (incremental=%s) answered %r" % (incremental, answer))
            print("refused\tconfigs-twice\tincremental=%s" % incremental, flush=True)
    finally:
        a.close()


def groups(bootstrap, topic, names):
    from kafka import KafkaConsumer
    for group in names.split(","):
        deadline = spec.Deadline(STEP_SECONDS)
        consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                 auto_offset_reset="earliest", enable_auto_commit=False, **COMMON)
        try:
            got = {}
            while not got:
                if deadline.expired():
                    spec.die("group %s consumed nothing of %s" % (group, topic))
                got = consumer.poll(timeout_ms=1000, max_records=1)
            consumer.commit()
            print("committed\t%s" % group, flush=True)
        finally:
            consumer.close()


def main():
    if os.environ.get("PINLOG_CLIENT_DEBUG"):
        import logging
        logging.basicConfig(level=logging.DEBUG)
    steps = {"loop": loop, "assignments": assignments, "duplicates": duplicates,
             "groups": groups}
    if len(sys.argv) < 3 or sys.argv[1] not in steps:
        spec.die(__doc__)
    steps[sys.argv[1]](*sys.argv[2:])


if __name__ == "__main__":
    main()
