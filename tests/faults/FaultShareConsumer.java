// The fault suite's share-group member (KIP-932; kafka-clients 4.4's
// KafkaShareConsumer), driven by tests/faults.rs, which compiles it with
// FaultProducer.java and runs
//   java -cp "<tmp>:<kafka libs>/*" FaultShareConsumer BOOTSTRAP GROUP TOPIC OUT STOP DRAIN_IDLE_SECONDS
//
// Explicit acknowledgement: every record delivered is accepted, and each
// poll's acknowledgements are committed with commitSync. One JSON line per
// event in OUT, for tests/faults/checker.py:
//   {"share": "rec", "p": P, "o": OFFSET, "id": VALUE, "dc": DELIVERY_COUNT, "t": MS}
//   {"share": "committed", "acks": [[P, OFFSET], ...], "t": MS}
//       the acknowledgements of the partitions commitSync answered without
//       an error, returned at t (durable from then on)
//   {"share": "commit_failed", "acks": [[P, OFFSET], ...], "err": NAME, "t": MS}
// Once the file STOP exists it drains: it goes on until no record came for
// DRAIN_IDLE_SECONDS since the latest of its last record, the return of its
// last commitSync, and the drain's start (longer than the group's lock
// duration, so records a lost session held come back first), then closes.

import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class FaultShareConsumer {
    /** Bound on the whole run, whatever STOP says. */
    static final Duration MAX_RUN = Duration.ofHours(3);
    /** Bound on the drain after STOP. */
    static final Duration MAX_DRAIN = Duration.ofSeconds(120);
    /** A commitSync slower than this is noted in the client's log. */
    static final Duration SLOW_COMMIT = Duration.ofSeconds(5);

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], group = args[1], topic = args[2];
        PrintWriter out = new PrintWriter(new OutputStreamWriter(
                new FileOutputStream(args[3], true), StandardCharsets.UTF_8), true);
        Path stop = Path.of(args[4]);
        long drainIdleNanos = Duration.ofSeconds(Long.parseLong(args[5])).toNanos();
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "fault-share");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put("share.acknowledgement.mode", "explicit");
        long started = System.nanoTime();
        Long drainFrom = null;
        // The later of the last record and the last commitSync's return:
        // time spent blocked in commitSync is not time without records.
        long lastProgress = System.nanoTime();
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            while (System.nanoTime() - started < MAX_RUN.toNanos()) {
                long now = System.nanoTime();
                if (drainFrom == null && Files.exists(stop)) {
                    drainFrom = now;
                }
                // Idle since the later of the last progress and the drain's
                // start: a commitSync that waited out a coordinator's
                // failover (24 s once, on a loaded machine) must not count
                // as the drain's quiet time.
                if (drainFrom != null && (now - Math.max(lastProgress, drainFrom) > drainIdleNanos
                        || now - drainFrom > MAX_DRAIN.toNanos())) {
                    break;
                }
                ConsumerRecords<String, String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(500));
                } catch (KafkaException e) {
                    // Faults: the next poll goes on (a share consumer
                    // recovers by itself); nothing is acknowledged here.
                    System.err.println("poll: " + e);
                    continue;
                }
                if (records.isEmpty()) {
                    continue;
                }
                lastProgress = System.nanoTime();
                List<long[]> acks = new ArrayList<>();
                for (ConsumerRecord<String, String> r : records) {
                    out.println("{\"share\":\"rec\",\"p\":" + r.partition() + ",\"o\":" + r.offset()
                            + ",\"id\":\"" + r.value() + "\",\"dc\":" + r.deliveryCount().orElse((short) -1)
                            + ",\"t\":" + System.currentTimeMillis() + "}");
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    acks.add(new long[] {r.partition(), r.offset()});
                }
                long committing = System.nanoTime();
                try {
                    Map<TopicIdPartition, Optional<KafkaException>> outcome = consumer.commitSync();
                    lastProgress = System.nanoTime();
                    long tookMs = (lastProgress - committing) / 1_000_000;
                    if (tookMs > SLOW_COMMIT.toMillis()) {
                        // In the client's log, which a failed run shows.
                        System.err.println("commitSync took " + tookMs + " ms");
                    }
                    List<long[]> clean = new ArrayList<>(), failed = new ArrayList<>();
                    String err = "";
                    for (long[] a : acks) {
                        Optional<KafkaException> e = outcome.entrySet().stream()
                                .filter(x -> x.getKey().partition() == (int) a[0])
                                .map(Map.Entry::getValue)
                                .findFirst()
                                // Not in the answer: nothing says it is durable.
                                .orElse(Optional.of(new KafkaException("no outcome")));
                        if (e.isPresent()) {
                            failed.add(a);
                            err = e.get().getClass().getSimpleName();
                        } else {
                            clean.add(a);
                        }
                    }
                    long t = System.currentTimeMillis();
                    if (!clean.isEmpty()) {
                        out.println("{\"share\":\"committed\",\"acks\":" + json(clean) + ",\"t\":" + t + "}");
                    }
                    if (!failed.isEmpty()) {
                        out.println("{\"share\":\"commit_failed\",\"acks\":" + json(failed)
                                + ",\"err\":\"" + err + "\",\"t\":" + t + "}");
                    }
                } catch (KafkaException e) {
                    lastProgress = System.nanoTime();
                    out.println("{\"share\":\"commit_failed\",\"acks\":" + json(acks) + ",\"err\":\""
                            + e.getClass().getSimpleName() + "\",\"t\":" + System.currentTimeMillis() + "}");
                }
            }
        }
        out.close();
    }

    static String json(List<long[]> acks) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < acks.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append('[').append(acks.get(i)[0]).append(',').append(acks.get(i)[1]).append(']');
        }
        return b.append(']').toString();
    }
}
