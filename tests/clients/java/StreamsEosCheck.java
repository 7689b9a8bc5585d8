import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

/**
 * Kafka Streams with processing.guarantee=exactly_once_v2 against a broker,
 * through a crash: the application dies abruptly (Runtime.halt, no shutdown
 * hook, no commit) in the middle of its input, a new instance with the same
 * application id and state directory takes over, and the committed output
 * must hold every input exactly once, and every key's running count must
 * read 1, 2, ..., n with no value repeated or skipped (the count's store is
 * in memory, rebuilt from its changelog, which is transactional too).
 *
 * <pre>
 *   StreamsEosCheck prepare BOOTSTRAP PREFIX RECORDS REPLICATION_FACTOR
 *   StreamsEosCheck run BOOTSTRAP PREFIX RECORDS STATE_DIR HALT_AFTER
 *   StreamsEosCheck verify BOOTSTRAP PREFIX RECORDS
 * </pre>
 *
 * run with HALT_AFTER > 0 halts the JVM once that many records were
 * processed; with 0 it runs until the committed output holds every input,
 * then closes cleanly. Each step prints "ok STEP" when it passes; every
 * wait is bounded.
 */
public class StreamsEosCheck {
    static final int PARTITIONS = 3;
    static final int KEYS = 10;
    static final Duration STEP_LIMIT = Duration.ofSeconds(90);

    public static void main(String[] args) throws Exception {
        String step = args[0];
        String bootstrap = args[1];
        String prefix = args[2];
        int records = Integer.parseInt(args[3]);
        switch (step) {
            case "prepare" -> prepare(bootstrap, prefix, records, Short.parseShort(args[4]));
            case "run" -> run(bootstrap, prefix, records, args[4], Long.parseLong(args[5]));
            case "verify" -> verify(bootstrap, prefix, records);
            default -> throw new IllegalArgumentException("unknown step " + step);
        }
    }

    static String input(String prefix) { return prefix + "-in"; }
    static String output(String prefix) { return prefix + "-out"; }
    static String counts(String prefix) { return prefix + "-counts"; }

    /** The input topic with RECORDS records (value i, key "k" + i % KEYS). */
    static void prepare(String bootstrap, String prefix, int records, short rf) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            List<NewTopic> topics = new ArrayList<>();
            for (String t : List.of(input(prefix), output(prefix), counts(prefix))) {
                topics.add(new NewTopic(t, PARTITIONS, rf));
            }
            admin.createTopics(topics).all().get();
        }
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(input(prefix), "k" + (i % KEYS), Integer.toString(i)));
            }
            producer.flush();
        }
        System.out.println("ok prepare");
    }

    /**
     * The application: every input goes to the output unchanged, and each
     * key's count (an in-memory store, with caching off so every update is
     * emitted) goes to the counts topic.
     */
    static void run(String bootstrap, String prefix, int records, String stateDir, long haltAfter)
            throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, prefix + "-app");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // The halted instance's member leaves the group when its session
        // expires: the smallest session the broker allows (Kafka's
        // group.min.session.timeout.ms) instead of Streams' 45 s.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        // Small polls, so that the halt lands inside a transaction with
        // records already sent and offsets not yet committed.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG), 50);
        // Sent at once (Streams lingers 100 ms): the halted transaction has
        // records in the log for its abort to hide.
        p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 0);
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> in =
                builder.stream(input(prefix), Consumed.with(Serdes.String(), Serdes.String()));
        AtomicLong processed = new AtomicLong();
        in.peek((k, v) -> {
                    if (haltAfter > 0 && processed.incrementAndGet() >= haltAfter) {
                        System.out.println("halting after " + processed.get() + " records");
                        System.out.flush();
                        Runtime.getRuntime().halt(3);
                    }
                })
                .to(output(prefix), Produced.with(Serdes.String(), Serdes.String()));
        in.groupByKey()
                .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts"))
                        .withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.Long()))
                .toStream()
                .mapValues(c -> Long.toString(c))
                .to(counts(prefix), Produced.with(Serdes.String(), Serdes.String()));
        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("stream thread failed: " + e);
            e.printStackTrace(System.out);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                    .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        if (haltAfter > 0) {
            // The halt ends the process; this bounds a run that never gets there.
            Thread.sleep(STEP_LIMIT.toMillis());
            System.out.println("FAIL run: did not process " + haltAfter + " records in " + STEP_LIMIT);
            Runtime.getRuntime().halt(1);
        }
        long deadline = System.nanoTime() + STEP_LIMIT.toNanos();
        int seen = 0;
        while (System.nanoTime() < deadline) {
            if (streams.state() == KafkaStreams.State.ERROR
                    || streams.state() == KafkaStreams.State.PENDING_ERROR) {
                break;
            }
            seen = committedOutput(bootstrap, prefix).size();
            if (seen >= records) {
                break;
            }
            Thread.sleep(500);
        }
        streams.close(Duration.ofSeconds(30));
        if (seen < records) {
            System.out.println("FAIL run: the committed output holds " + seen + " of " + records
                    + " inputs after " + STEP_LIMIT + " (streams state " + streams.state() + ")");
            System.exit(1);
        }
        System.out.println("ok run");
    }

    /** The distinct input numbers in the committed output. */
    static Set<Integer> committedOutput(String bootstrap, String prefix) {
        Set<Integer> values = new HashSet<>();
        for (ConsumerRecord<byte[], byte[]> r : readCommitted(bootstrap, output(prefix))) {
            values.add(Integer.parseInt(new String(r.value(), StandardCharsets.UTF_8)));
        }
        return values;
    }

    /** Every record of `topic` up to its end offsets, as read_committed reads them. */
    static List<ConsumerRecord<byte[], byte[]>> readCommitted(String bootstrap, String topic) {
        return read(bootstrap, topic, "read_committed");
    }

    /** Every record of `topic` up to its end offsets, at `isolation`. */
    static List<ConsumerRecord<byte[], byte[]>> read(String bootstrap, String topic, String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            // A read_committed consumer's end offsets are the LSOs.
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.nanoTime() + STEP_LIMIT.toNanos();
            while (System.nanoTime() < deadline) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    done &= c.position(tp) >= end.get(tp);
                }
                if (done) {
                    return out;
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    out.add(r);
                }
            }
            throw new IllegalStateException("could not read " + topic + " to its end in " + STEP_LIMIT);
        }
    }

    /**
     * Exactly once: every input once in the output, and each key's counts
     * 1, 2, ..., n in the order they were committed.
     */
    static void verify(String bootstrap, String prefix, int records) {
        Map<Integer, Integer> times = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : readCommitted(bootstrap, output(prefix))) {
            int v = Integer.parseInt(new String(r.value(), StandardCharsets.UTF_8));
            times.merge(v, 1, Integer::sum);
        }
        List<String> problems = new ArrayList<>();
        for (int i = 0; i < records; i++) {
            int n = times.getOrDefault(i, 0);
            if (n != 1) {
                problems.add("input " + i + " is in the committed output " + n + " times");
            }
        }
        // One partition holds all of a key's counts, in commit order.
        Map<String, List<Long>> countsByKey = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : readCommitted(bootstrap, counts(prefix))) {
            String key = new String(r.key(), StandardCharsets.UTF_8);
            long count = Long.parseLong(new String(r.value(), StandardCharsets.UTF_8));
            countsByKey.computeIfAbsent(key, k -> new ArrayList<>()).add(count);
        }
        for (int k = 0; k < KEYS; k++) {
            String key = "k" + k;
            long expected = records / KEYS + (k < records % KEYS ? 1 : 0);
            List<Long> seen = countsByKey.getOrDefault(key, List.of());
            boolean ordered = seen.size() == expected;
            for (int i = 0; ordered && i < seen.size(); i++) {
                ordered = seen.get(i) == i + 1;
            }
            if (!ordered) {
                problems.add("key " + key + ": committed counts " + summary(seen) + ", expected 1.." + expected);
            }
        }
        if (!problems.isEmpty()) {
            System.out.println("FAIL verify: " + problems.size() + " problems");
            problems.stream().limit(20).forEach(s -> System.out.println("  " + s));
            System.exit(1);
        }
        // What the crash left behind: records of aborted transactions,
        // which only read_uncommitted shows.
        int uncommitted = read(bootstrap, output(prefix), "read_uncommitted").size();
        System.out.println("ok verify: " + records + " inputs exactly once, counts of " + KEYS
                + " keys without a gap or repeat; " + (uncommitted - records)
                + " output records of aborted transactions in the log");
    }

    static String summary(List<Long> counts) {
        if (counts.size() <= 12) {
            return counts.toString();
        }
        return counts.subList(0, 6) + " ... " + counts.subList(counts.size() - 6, counts.size())
                + " (" + counts.size() + " values)";
    }
}
