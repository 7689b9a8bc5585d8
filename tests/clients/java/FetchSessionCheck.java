// Apache Kafka's Java consumer (kafka-clients 4.4, which uses incremental
// fetch sessions, KIP-227) through the situations that make it send a full
// fetch on an existing session: a dropped connection, a seek, a group
// rebalance, and partitions removed and re-added. Driven by tests/broker/clients.rs:
//
//   FetchSessionCheck BOOTSTRAP TOPIC PARTITIONS CUT_REQUEST_FILE CUT_DONE_FILE
//
// It creates TOPIC, then runs the phases below in order, printing
// `phase NAME ok` after each. For the cut, it creates CUT_REQUEST_FILE and
// keeps polling until the test has cut every connection and created
// CUT_DONE_FILE. Every wait is bounded (STEP); on failure it prints ERROR
// and exits 1.

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class FetchSessionCheck {
    static final Duration STEP = Duration.ofSeconds(60);
    static final int RECORDS_PER_PHASE = 400;
    static final Duration POLL = Duration.ofMillis(100);

    static String bootstrap;
    static String topic;
    static int partitions;

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            die("usage: FetchSessionCheck BOOTSTRAP TOPIC PARTITIONS CUT_REQUEST_FILE CUT_DONE_FILE");
        }
        bootstrap = args[0];
        topic = args[1];
        partitions = Integer.parseInt(args[2]);
        Path cutRequest = Path.of(args[3]);
        Path cutDone = Path.of(args[4]);
        try {
            run(cutRequest, cutDone);
        } catch (Exception e) {
            die(e.toString());
        }
        System.out.println("done");
    }

    static void run(Path cutRequest, Path cutDone) throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1)))
                    .all().get(STEP.toSeconds(), TimeUnit.SECONDS);
        }
        try (KafkaProducer<String, String> producer = producer();
             KafkaConsumer<String, String> a = consumer("fsc-group")) {
            // Subscribe: the session is created and used incrementally.
            produce(producer, "a");
            a.subscribe(List.of(topic));
            expect("subscribe", List.of(a), values("a"));

            // A dropped connection: the client's next fetch is a full fetch
            // naming its old session (session id, epoch 0).
            Files.createFile(cutRequest);
            waitFor("the connections to be cut", () -> {
                a.poll(POLL);
                return Files.exists(cutDone);
            });
            produce(producer, "b");
            expect("connection cut", List.of(a), values("b"));

            // A seek back to the start.
            a.seekToBeginning(a.assignment());
            Set<String> ab = values("a");
            ab.addAll(values("b"));
            expect("seek", List.of(a), ab);

            // A rebalance: a second member joins, then leaves.
            try (KafkaConsumer<String, String> b = consumer("fsc-group")) {
                b.subscribe(List.of(topic));
                waitFor("the second member to get partitions", () -> {
                    a.poll(POLL);
                    b.poll(POLL);
                    return !b.assignment().isEmpty() && a.assignment().size() < partitions;
                });
                produce(producer, "c");
                expect("rebalance join", List.of(a, b), values("c"));
            }
            waitFor("the first member to get every partition back", () -> {
                a.poll(POLL);
                return a.assignment().size() == partitions;
            });
            produce(producer, "d");
            expect("rebalance leave", List.of(a), values("d"));
        }

        // Partitions removed from a session and added back.
        try (KafkaConsumer<String, String> c = consumer(null)) {
            TopicPartition p0 = new TopicPartition(topic, 0);
            TopicPartition p1 = new TopicPartition(topic, 1);
            c.assign(List.of(p0, p1));
            c.seekToBeginning(List.of(p0, p1));
            for (int i = 0; i < 10; i++) c.poll(POLL);
            c.assign(List.of(p0));
            for (int i = 0; i < 10; i++) c.poll(POLL);
            c.assign(List.of(p0, p1));
            c.seek(p1, 0);
            long end = c.endOffsets(List.of(p1), STEP).get(p1);
            Set<Long> seen = new HashSet<>();
            waitFor("every record of partition 1 again", () -> {
                for (ConsumerRecord<String, String> r : c.poll(POLL)) {
                    if (r.partition() == 1) seen.add(r.offset());
                }
                return seen.size() >= end;
            });
            System.out.println("phase reassign ok records=" + seen.size());
        }
    }

    static Set<String> values(String phase) {
        Set<String> s = new HashSet<>();
        for (int i = 0; i < RECORDS_PER_PHASE; i++) s.add(phase + "-" + i);
        return s;
    }

    static void produce(KafkaProducer<String, String> producer, String phase) throws Exception {
        List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
        for (int i = 0; i < RECORDS_PER_PHASE; i++) {
            sent.add(producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, phase + "-" + i)));
        }
        for (var f : sent) f.get(STEP.toSeconds(), TimeUnit.SECONDS);
    }

    /// Polls `consumers` until together they have seen every value of `want`.
    static void expect(String phase, List<KafkaConsumer<String, String>> consumers, Set<String> want)
            throws Exception {
        Set<String> seen = new HashSet<>();
        waitFor(phase + ": every record", () -> {
            for (KafkaConsumer<String, String> c : consumers) {
                for (ConsumerRecord<String, String> r : c.poll(POLL)) {
                    if (want.contains(r.value())) seen.add(r.value());
                }
            }
            return seen.size() == want.size();
        });
        System.out.println("phase " + phase + " ok records=" + seen.size());
    }

    interface Check {
        boolean done() throws Exception;
    }

    static void waitFor(String what, Check check) throws Exception {
        Instant deadline = Instant.now().plus(STEP);
        while (!check.done()) {
            if (Instant.now().isAfter(deadline)) {
                throw new IllegalStateException("timed out after " + STEP + " waiting for " + what);
            }
        }
    }

    static KafkaProducer<String, String> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return new KafkaConsumer<>(p);
    }

    static void die(String msg) {
        System.out.println("ERROR " + msg);
        System.out.flush();
        System.exit(1);
    }
}
