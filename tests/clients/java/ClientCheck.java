// Apache Kafka's Java client (kafka-clients 4.4) against a broker, driven by
// tests/broker/clients.rs, which compiles this file with
//   javac -cp "<kafka libs>/*" -d <tmp> ClientCheck.java
// and runs it with `java -cp "<tmp>:<kafka libs>/*" ClientCheck ...`. Usage:
//
//   ClientCheck create  BOOTSTRAP PARTITIONS TOPIC...
//   ClientCheck produce BOOTSTRAP N PREFIX CODEC...   # topic PREFIX-CODEC
//   ClientCheck consume BOOTSTRAP TOPIC...            # to the end offsets
//
// The data and the output line format are the ones of tests/clients/spec.py
// (keep them identical). The producer keeps Kafka's DEFAULT settings apart
// from compression.type: since Kafka 3.0 that means enable.idempotence=true,
// acks=all. The consumer has no group: assign() + seekToBeginning(). Every
// step has a time limit (STEP).

import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
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
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ClientCheck {
    static final Duration STEP = Duration.ofSeconds(60);
    static final int KEYS = 37;

    static String key(int seq) {
        return "key-" + (seq % KEYS);
    }

    static String value(String codec, int seq) {
        return String.format("%s:%06d:%s", codec, seq, "pinlog-".repeat(4 + seq % 16));
    }

    static String[][] headers(String codec, int seq) {
        return new String[][] {
            {"codec", codec}, {"seq", Integer.toString(seq)}, {"dup", "a"}, {"dup", "b"}
        };
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            die("usage: ClientCheck create|produce|consume BOOTSTRAP ...");
        }
        String bootstrap = args[1];
        List<String> rest = List.of(args).subList(2, args.length);
        switch (args[0]) {
            case "create" -> create(bootstrap, Integer.parseInt(rest.get(0)), rest.subList(1, rest.size()));
            case "produce" -> produce(bootstrap, Integer.parseInt(rest.get(0)), rest.get(1),
                    rest.subList(2, rest.size()));
            case "consume" -> consume(bootstrap, rest);
            default -> die("unknown command " + args[0]);
        }
    }

    static void die(String msg) {
        System.err.println("ERROR: " + msg);
        System.exit(1);
    }

    // Diagnostics only: "k=v,k=v" from environment variable `var` (the
    // tests never set it), e.g. max.in.flight.requests.per.connection=1.
    static void extraProps(Properties p, String var) {
        String extra = System.getenv(var);
        if (extra == null || extra.isEmpty()) {
            return;
        }
        for (String kv : extra.split(",")) {
            String[] parts = kv.split("=", 2);
            p.put(parts[0].trim(), parts[1].trim());
        }
    }

    static void create(String bootstrap, int partitions, List<String> topics) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        try (Admin admin = Admin.create(p)) {
            List<NewTopic> nts = new ArrayList<>();
            for (String t : topics) {
                nts.add(new NewTopic(t, partitions, (short) 1));
            }
            // Throws (ExecutionException) if any creation failed.
            admin.createTopics(nts).all().get(STEP.toSeconds(), TimeUnit.SECONDS);
            System.out.println("created " + String.join(" ", topics));
        }
    }

    static void produce(String bootstrap, int n, String prefix, List<String> codecs) throws Exception {
        for (String codec : codecs) {
            String topic = prefix + "-" + codec;
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
            p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            extraProps(p, "PINLOG_JAVA_PRODUCER_PROPS");
            long deadline = System.nanoTime() + STEP.toNanos();
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                List<Future<RecordMetadata>> sent = new ArrayList<>(n);
                for (int seq = 0; seq < n; seq++) {
                    ProducerRecord<String, String> r = new ProducerRecord<>(topic, key(seq), value(codec, seq));
                    for (String[] h : headers(codec, seq)) {
                        r.headers().add(h[0], h[1].getBytes(StandardCharsets.UTF_8));
                    }
                    sent.add(producer.send(r));
                }
                producer.flush();
                for (Future<RecordMetadata> f : sent) {
                    long left = Math.max(1, deadline - System.nanoTime());
                    f.get(left, TimeUnit.NANOSECONDS); // throws on a failed send
                }
            }
            System.out.println("produced " + n + " to " + topic);
        }
    }

    static void consume(String bootstrap, List<String> topics) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        long deadline = System.nanoTime() + STEP.toNanos();
        PrintWriter out = new PrintWriter(new BufferedWriter(
                new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16));
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (String t : topics) {
                List<PartitionInfo> parts = c.partitionsFor(t);
                if (parts == null || parts.isEmpty()) {
                    die("no partitions for " + t);
                }
                for (PartitionInfo pi : parts) {
                    tps.add(new TopicPartition(t, pi.partition()));
                }
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
            Map<TopicPartition, Long> last = new HashMap<>();
            while (!pending.isEmpty()) {
                if (System.nanoTime() > deadline) {
                    out.flush();
                    die("consume timed out; partitions not read to the end: " + pending
                            + " (last offsets seen " + last + ", end offsets " + end + ")");
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofSeconds(1))) {
                    List<String> hs = new ArrayList<>();
                    for (Header h : r.headers()) {
                        hs.add(h.key() + "=" + (h.value() == null ? "<null>"
                                : new String(h.value(), StandardCharsets.UTF_8)));
                    }
                    out.println(String.join("\t", r.topic(), Integer.toString(r.partition()),
                            Long.toString(r.offset()), r.key() == null ? "<null>" : r.key(),
                            r.value() == null ? "<null>" : r.value(), String.join(",", hs)));
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    last.put(tp, r.offset());
                    if (r.offset() + 1 >= end.get(tp)) {
                        pending.remove(tp);
                    }
                }
            }
        }
        out.flush();
    }
}
