// Apache Kafka's Java client (kafka-clients 4.4) over TLS, driven by
// tests/security.rs, which compiles this file with
//   javac -cp "<kafka libs>/*" -d <tmp> SecurityCheck.java
// and runs it with `java -cp "<tmp>:<kafka libs>/*" SecurityCheck ...`. Usage:
//
//   SecurityCheck PROPERTIES create  TOPIC PARTITIONS   # then prints the brokers
//   SecurityCheck PROPERTIES produce TOPIC N
//   SecurityCheck PROPERTIES consume TOPIC              # to the end offsets
//
// PROPERTIES is a Kafka client properties file, the same one Kafka's tools
// read with --command-config: bootstrap.servers, security.protocol=SSL and
// the ssl.* settings (PEM stores: ssl.truststore.type=PEM,
// ssl.keystore.type=PEM, the key unencrypted PKCS#8 in the keystore file).
//
// Record `seq` has key key-<seq % 7> and value value-<seq as 6 digits>; a
// consumed record is printed as `topic partition offset key value`,
// tab-separated (the format tests/clients/security_client.py prints). The
// producer keeps Kafka's defaults (idempotence on, acks=all). Every step has
// a time limit (STEP).

import java.io.FileInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SecurityCheck {
    static final Duration STEP = Duration.ofSeconds(60);
    static final int KEYS = 7;

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            die("usage: SecurityCheck PROPERTIES create|produce|consume TOPIC ...");
        }
        Properties base = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            base.load(in);
        }
        String topic = args[2];
        switch (args[1]) {
            case "create" -> create(base, topic, Integer.parseInt(args[3]));
            case "produce" -> produce(base, topic, Integer.parseInt(args[3]));
            case "consume" -> consume(base, topic);
            default -> die("unknown command " + args[1]);
        }
    }

    static void die(String msg) {
        System.err.println("ERROR: " + msg);
        System.exit(1);
    }

    static Properties with(Properties base) {
        Properties p = new Properties();
        p.putAll(base);
        return p;
    }

    static void create(Properties base, String topic, int partitions) throws Exception {
        Properties p = with(base);
        p.put("default.api.timeout.ms", 30000);
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1)))
                    .all().get(STEP.toSeconds(), TimeUnit.SECONDS);
            System.out.println("created " + topic);
            // DescribeCluster answers with the endpoints of the listener the
            // request came in on.
            for (Node n : admin.describeCluster().nodes().get(STEP.toSeconds(), TimeUnit.SECONDS)) {
                System.out.println("broker " + n.id() + " " + n.host() + ":" + n.port());
            }
        }
    }

    static void produce(Properties base, String topic, int n) throws Exception {
        Properties p = with(base);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        long deadline = System.nanoTime() + STEP.toNanos();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>(n);
            for (int seq = 0; seq < n; seq++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "key-" + (seq % KEYS),
                        String.format("value-%06d", seq))));
            }
            producer.flush();
            for (Future<RecordMetadata> f : sent) {
                long left = Math.max(1, deadline - System.nanoTime());
                f.get(left, TimeUnit.NANOSECONDS); // throws on a failed send
            }
        }
        System.out.println("produced " + n + " to " + topic);
    }

    static void consume(Properties base, String topic) throws Exception {
        Properties p = with(base);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        long deadline = System.nanoTime() + STEP.toNanos();
        StringBuilder out = new StringBuilder();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            List<PartitionInfo> parts = c.partitionsFor(topic);
            if (parts == null || parts.isEmpty()) {
                die("no partitions for " + topic);
            }
            for (PartitionInfo pi : parts) {
                tps.add(new TopicPartition(topic, pi.partition()));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            Set<TopicPartition> pending = new HashSet<>();
            for (TopicPartition tp : tps) {
                if (end.get(tp) > 0) {
                    pending.add(tp);
                }
            }
            while (!pending.isEmpty()) {
                if (System.nanoTime() > deadline) {
                    System.out.print(out);
                    die("consume timed out; partitions not read to the end: " + pending);
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofSeconds(1))) {
                    out.append(String.join("\t", r.topic(), Integer.toString(r.partition()),
                            Long.toString(r.offset()), r.key(), r.value())).append('\n');
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    if (r.offset() + 1 >= end.get(tp)) {
                        pending.remove(tp);
                    }
                }
            }
        }
        System.out.print(out);
    }
}
