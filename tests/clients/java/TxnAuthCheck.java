// A transactional producer under ACLs, through Apache Kafka's Java client
// (kafka-clients 4.4): tests/broker/authorization.rs runs it as a source file.
//
//   java TxnAuthCheck.java <bootstrap> <client properties> <topic> <group> <transactional id>...
//
// For each transactional id in turn: initTransactions, one record to
// partition 0 of <topic>, sendOffsetsToTransaction for <group>, and
// commitTransaction. Prints "<id> committed", or "<id> <exception class>"
// when the broker refused a step. Every wait is bounded (MAX_BLOCK).

import java.io.FileInputStream;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnAuthCheck {
    static final Duration MAX_BLOCK = Duration.ofSeconds(30);

    public static void main(String[] args) throws Exception {
        Properties base = new Properties();
        try (FileInputStream in = new FileInputStream(args[1])) {
            base.load(in);
        }
        String topic = args[2];
        String group = args[3];
        for (int i = 4; i < args.length; i++) {
            String id = args[i];
            Properties p = new Properties();
            p.putAll(base);
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
            p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(MAX_BLOCK.toMillis()));
            KafkaProducer<String, String> producer = new KafkaProducer<>(p);
            try {
                producer.initTransactions();
                producer.beginTransaction();
                RecordMetadata sent = producer.send(new ProducerRecord<>(topic, 0, "key", id))
                    .get(MAX_BLOCK.toMillis(), TimeUnit.MILLISECONDS);
                producer.sendOffsetsToTransaction(
                    Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(sent.offset() + 1)),
                    new ConsumerGroupMetadata(group));
                producer.commitTransaction();
                System.out.println(id + " committed");
            } catch (Exception e) {
                Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
                System.out.println(id + " " + cause.getClass().getSimpleName());
            } finally {
                producer.close(MAX_BLOCK);
            }
        }
    }
}
