// A group member on Apache Kafka's Java client (kafka-clients 4.4, the
// classic group protocol, which is the default), driven by tests/groups.rs.
// It is compiled with
//   javac -cp "<kafka libs>/*" -d <tmp> GroupConsumer.java
// and runs in one of two modes.
//
// `GroupConsumer BOOTSTRAP GROUP TOPIC N` subscribes to TOPIC in GROUP
// (auto.offset.reset=earliest, auto-commit off), consumes until it has seen
// N distinct records, commitSync()s what it consumed, reads back committed()
// and endOffsets(), and closes (which sends LeaveGroup). Output, one line
// each:
//   assigned P,P,...          partitions after each rebalance
//   rec P OFFSET KEY VALUE    every record
//   committed P OFFSET        per partition, after commitSync
//   end P OFFSET              per partition
//   done N                    after close()
// Everything has a time limit (STEP); on failure it prints ERROR and exits 1.
//
// `GroupConsumer member BOOTSTRAP GROUP TOPIC NAME STOP_FILE MAX_SECONDS
// [NAME=VALUE...]` is a long-running member that speaks group_client.py's
// event format (see its doc), so the tests treat it like the Python
// members: it subscribes with auto-commit every 500 ms and earliest, with
// the consumer settings NAME=VALUE on top (assignor, group.instance.id,
// timeouts), prints its rebalance callbacks (`assigned`, `revoked`, `lost`:
// the partitions each call got), `assignment parts=... gen=G` when its
// assignment or generation changed, every record, and stops (close(), which
// commits and, for a dynamic member, leaves the group) once STOP_FILE exists,
// or after reporting an exception of poll() as `error name=CLASS detail=...`.
// After MAX_SECONDS it gives up and exits 3. With `group.protocol=consumer`
// (KIP-848) among the settings, the generation it reports is its member
// epoch; the setting `pinlog.pattern=REGEX` subscribes to the broker-side
// regular expression REGEX (KIP-848's SubscriptionPattern) instead of TOPIC,
// and every `assignment` event then also carries `tps=TOPIC:P,...`.

import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class GroupConsumer {
    static final Duration STEP = Duration.ofSeconds(60);

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("member")) {
            member(args);
            return;
        }
        if (args.length != 4) {
            die("usage: GroupConsumer BOOTSTRAP GROUP TOPIC N");
        }
        String bootstrap = args[0], group = args[1], topic = args[2];
        int want = Integer.parseInt(args[3]);
        PrintWriter out = new PrintWriter(new BufferedWriter(
                new OutputStreamWriter(System.out, StandardCharsets.UTF_8)), false);
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "pinlog-test-java");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        long deadline = System.nanoTime() + STEP.toNanos();
        // partition -> next offset to commit (last consumed + 1)
        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> parts) {}

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    out.println("assigned " + parts.stream().map(tp -> Integer.toString(tp.partition()))
                            .sorted().collect(Collectors.joining(",")));
                }
            });
            while (seen.size() < want) {
                if (System.nanoTime() > deadline) {
                    out.flush();
                    die("timed out with " + seen.size() + " of " + want + " records");
                }
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    out.println("rec " + r.partition() + " " + r.offset() + " " + r.key() + " " + r.value());
                    seen.add(r.value());
                    next.put(new TopicPartition(r.topic(), r.partition()),
                            new OffsetAndMetadata(r.offset() + 1));
                }
            }
            consumer.commitSync(next, STEP);
            Set<TopicPartition> all = consumer.partitionsFor(topic, STEP).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).collect(Collectors.toSet());
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(all, STEP);
            for (TopicPartition tp : new TreeMap<Integer, TopicPartition>(all.stream()
                    .collect(Collectors.toMap(TopicPartition::partition, tp -> tp))).values()) {
                OffsetAndMetadata c = committed.get(tp);
                out.println("committed " + tp.partition() + " " + (c == null ? -1 : c.offset()));
            }
            for (Map.Entry<TopicPartition, Long> e : consumer.endOffsets(all, STEP).entrySet()) {
                out.println("end " + e.getKey().partition() + " " + e.getValue());
            }
        }
        out.println("done " + seen.size());
        out.flush();
    }

    /** One event line (group_client.py's format), flushed at once. */
    static void emit(String ev, String... fields) {
        StringBuilder b = new StringBuilder(ev);
        for (int i = 0; i + 1 < fields.length; i += 2) {
            b.append(' ').append(fields[i]).append('=').append(escape(fields[i + 1]));
        }
        b.append(" t=").append(System.currentTimeMillis());
        System.out.println(b);
        System.out.flush();
    }

    static String escape(String v) {
        return v.replace("%", "%25").replace(" ", "%20").replace("\t", "%09")
                .replace("\n", "%0A").replace("\r", "%0D");
    }

    static String parts(Collection<TopicPartition> tps) {
        return tps.stream().map(TopicPartition::partition).sorted()
                .map(p -> Integer.toString(p)).collect(Collectors.joining(","));
    }

    static String topicParts(Collection<TopicPartition> tps) {
        return tps.stream().map(tp -> tp.topic() + ":" + tp.partition()).sorted()
                .collect(Collectors.joining(","));
    }

    static void member(String[] args) throws Exception {
        if (args.length < 7) {
            die("usage: GroupConsumer member BOOTSTRAP GROUP TOPIC NAME STOP_FILE MAX_SECONDS "
                    + "[NAME=VALUE...]");
        }
        String bootstrap = args[1], group = args[2], topic = args[3], name = args[4];
        Path stop = Path.of(args[5]);
        long deadline = System.nanoTime() + Duration.ofSeconds(Long.parseLong(args[6])).toNanos();
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
        props.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, "500");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        String pattern = null;
        for (int i = 7; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            if (kv.length != 2) {
                die("not NAME=VALUE: " + args[i]);
            }
            if (kv[0].equals("pinlog.pattern")) {
                pattern = kv[1];
            } else {
                props.put(kv[0], kv[1]);
            }
        }
        emit("start", "name", name, "lib", "java", "group", group,
                "pid", Long.toString(ProcessHandle.current().pid()));
        long consumed = 0;
        String shown = null;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            // The listener runs inside poll(), on this thread.
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    emit("revoked", "parts", parts(tps));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    emit("assigned", "parts", parts(tps));
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> tps) {
                    emit("lost", "parts", parts(tps));
                }
            };
            if (pattern != null) {
                consumer.subscribe(new SubscriptionPattern(pattern), listener);
            } else {
                consumer.subscribe(List.of(topic), listener);
            }
            String reason = "stop file";
            while (!Files.exists(stop)) {
                if (System.nanoTime() > deadline) {
                    emit("fatal", "error", "deadline; consumed " + consumed + " records");
                    System.exit(3);
                }
                ConsumerRecords<String, String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (KafkaException e) {
                    // Errors poll() throws are fatal to this consumer (a
                    // full group, a fenced instance id): report and stop.
                    emit("error", "name", e.getClass().getSimpleName(),
                            "detail", String.valueOf(e.getMessage()));
                    reason = "error";
                    break;
                }
                for (ConsumerRecord<String, String> r : records) {
                    emit("rec", "p", Integer.toString(r.partition()), "o", Long.toString(r.offset()),
                            "k", r.key(), "v", r.value());
                    consumed++;
                }
                String now = parts(consumer.assignment()) + " "
                        + consumer.groupMetadata().generationId() + " "
                        + topicParts(consumer.assignment());
                if (!now.equals(shown)) {
                    String[] w = now.split(" ", -1);
                    if (pattern != null) {
                        emit("assignment", "parts", w[0], "gen", w[1], "tps", w[2]);
                    } else {
                        emit("assignment", "parts", w[0], "gen", w[1]);
                    }
                    shown = now;
                }
            }
            emit("stopping", "reason", reason, "consumed", Long.toString(consumed));
        }
        emit("closed", "consumed", Long.toString(consumed));
    }

    static void die(String msg) {
        System.err.println("ERROR: " + msg);
        System.exit(1);
    }
}
