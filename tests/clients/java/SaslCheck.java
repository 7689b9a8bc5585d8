// Apache Kafka's Java client (kafka-clients 4.4) over an authenticated
// listener, driven by tests/broker/sasl.rs:
//
//   SaslCheck BOOTSTRAP CLIENT_PROPERTIES TOPIC N SECONDS
//
// reads Kafka client properties (security.protocol, sasl.*, ssl.*) from the
// file, produces N records spread over SECONDS (so that a short
// connections.max.reauth.ms makes the client re-authenticate in between),
// then consumes the topic from the beginning and prints "consumed <count>".
// Every step has a time limit (STEP).

import java.io.FileInputStream;
import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SaslCheck {
    static final Duration STEP = Duration.ofSeconds(60);

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Properties security = new Properties();
        try (FileInputStream in = new FileInputStream(args[1])) {
            security.load(in);
        }
        String topic = args[2];
        int n = Integer.parseInt(args[3]);
        long spreadMs = Long.parseLong(args[4]) * 1000;

        Properties p = new Properties();
        p.putAll(security);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60000);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get(60, java.util.concurrent.TimeUnit.SECONDS);
                if (spreadMs > 0) {
                    Thread.sleep(spreadMs / n);
                }
            }
        }

        Properties c = new Properties();
        c.putAll(security);
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        int consumed = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, STEP);
            List<TopicPartition> parts = infos.stream()
                .map(i -> new TopicPartition(i.topic(), i.partition())).toList();
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long deadline = System.currentTimeMillis() + STEP.toMillis();
            while (consumed < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    if (!r.value().equals("v" + r.key().substring(1))) {
                        throw new IllegalStateException("record " + r.key() + " holds " + r.value());
                    }
                    consumed++;
                }
            }
        }
        System.out.println("consumed " + consumed);
    }
}
