"""How soon every broker shows an admin change: the probe of
tuning/admin-visibility.sh. Usage:

  visibility_probe.py ADMIN_BOOTSTRAP ROUNDS WORKERS PREFIX

WORKERS threads, each with its own kafka-python admin client bootstrapped at
ADMIN_BOOTSTRAP (one broker), each run ROUNDS rounds of: CreateTopics (3
partitions, replication factor 3), then Metadata to every broker of the
cluster, each alone, until it lists the topic with a leader for every
partition; DeleteTopics, then Metadata until every broker answers
UNKNOWN_TOPIC_OR_PARTITION. Prints one JSON object: per operation, the
answer latencies and the delays from the answer until each broker showed
the change (ms), with the broker that answered marked. Every wait is
bounded (GIVE_UP_MS per broker and change).
"""

import json
import sys
import threading
import time

from kafka.admin import KafkaAdminClient
from kafka.protocol.metadata import MetadataRequest

GIVE_UP_MS = 30000
UNKNOWN_TOPIC_OR_PARTITION = 3
PARTITIONS = 3


def now_ms():
    return time.monotonic() * 1000.0


def shows(a, node, topic, created):
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                              allow_auto_topic_creation=False)

    async def ask():
        return await a._manager.send(request, node_id=node)

    for t in a._manager.run(ask).to_dict()["topics"]:
        if t["name"] != topic:
            continue
        if not created:
            return t["error_code"] == UNKNOWN_TOPIC_OR_PARTITION
        leaders = [p["leader_id"] for p in t["partitions"]]
        return t["error_code"] == 0 and len(leaders) == PARTITIONS and min(leaders) >= 0
    return False


def delays(a, nodes, first, topic, created, answered):
    """{node: ms from the answer until it showed the change}, and whether
    the first Metadata of all, to `first` (the broker that answered), did
    not show it yet; `first` is asked first in every sweep."""
    out = {}
    pending = set(nodes)
    stale = None
    while pending:
        for node in sorted(pending, key=lambda n: (n != first, n)):
            showed = shows(a, node, topic, created)
            if stale is None:
                stale = not showed
            if showed:
                out[node] = now_ms() - answered
                pending.discard(node)
        if pending and now_ms() - answered > GIVE_UP_MS:
            for node in pending:
                out[node] = None
            break
    return out, stale


def worker(bootstrap, rounds, prefix, results, errors):
    try:
        a = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000,
                             client_id="pinlog-visibility-probe")
        nodes = [b["broker_id"] for b in a.describe_cluster()["brokers"]]
        for i in range(rounds):
            topic = "%s-%d" % (prefix, i)
            started = now_ms()
            a.create_topics({topic: {"num_partitions": PARTITIONS, "replication_factor": 3}},
                            timeout_ms=30000)
            answered = now_ms()
            answering = a._controller_id
            seen, stale = delays(a, nodes, answering, topic, True, answered)
            results.append({"op": "create", "answer_ms": answered - started, "answering": answering,
                            "delays": seen, "stale": stale})
            started = now_ms()
            a.delete_topics([topic], timeout_ms=30000)
            answered = now_ms()
            seen, stale = delays(a, nodes, answering, topic, False, answered)
            results.append({"op": "delete", "answer_ms": answered - started, "answering": answering,
                            "delays": seen, "stale": stale})
        a.close()
    except Exception as e:  # reported by main
        errors.append(repr(e))


def main():
    bootstrap, rounds, workers, prefix = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    results, errors = [], []
    threads = [threading.Thread(target=worker, args=(bootstrap, rounds, "%s-w%d" % (prefix, w),
                                                     results, errors))
               for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print("ERROR: %s" % errors[0], file=sys.stderr)
        sys.exit(1)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
