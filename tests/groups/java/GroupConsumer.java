// A group member on Apache Kafka's Java client (kafka-clients 4.4, the
// classic group protocol, which is the default), driven by tests/groups.rs.
// It is compiled with
//   javac -cp "<kafka libs>/*" -d <tmp> GroupConsumer.java
// and run as `java -cp "<tmp>:<kafka libs>/*" GroupConsumer BOOTSTRAP GROUP TOPIC N`.
//
// It subscribes to TOPIC in GROUP (auto.offset.reset=earliest, auto-commit
// off), consumes until it has seen N distinct records, commitSync()s what it
// consumed, reads back committed() and endOffsets(), and closes (which
// sends LeaveGroup). Output, one line each:
//   assigned P,P,...          partitions after each rebalance
//   rec P OFFSET KEY VALUE    every record
//   committed P OFFSET        per partition, after commitSync
//   end P OFFSET              per partition
//   done N                    after close()
// Everything has a time limit (STEP); on failure it prints ERROR and exits 1.

import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
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
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class GroupConsumer {
    static final Duration STEP = Duration.ofSeconds(60);

    public static void main(String[] args) throws Exception {
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

    static void die(String msg) {
        System.err.println("ERROR: " + msg);
        System.exit(1);
    }
}
