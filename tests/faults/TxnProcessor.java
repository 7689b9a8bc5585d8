// The fault suite's transactional read-process-write workload (kafka-clients
// 4.4, so transaction version 2 on a new pinlog cluster), driven by
// tests/faults.rs, which compiles it beside FaultProducer.java and runs
//   java -cp "<tmp>:<kafka libs>/*" TxnProcessor BOOTSTRAP IN OUT_TOPIC GROUP NAME SEED OUT STOP
//
// It consumes IN (read_committed, in the consumer group GROUP) and, for every
// poll, writes one record per input record to OUT_TOPIC in one transaction,
// with the consumed offsets committed in the same transaction
// (sendOffsetsToTransaction). About one transaction in ABORT_ONE_IN is
// aborted on purpose, after its records were sent, and the consumer rewinds
// to redo that input. Each output value is "TXN|P:O|ID": the transaction's
// name, the input record's partition and offset, and its value.
//
// One JSON line per transaction in OUT (tests/faults/checker.py reads them):
//   {"txn": TXN, "sent": N}                                   before commit
//   {"txn": TXN, "outcome": "committed"|"aborted"|"unknown", ["err": NAME]}
// "unknown" is a commit or abort that failed: the transaction may have
// committed or not, and the checker accepts either, but only whole. After an
// error the producer and the consumer are closed and made anew, as an
// application would: the new producer's initTransactions fences the old
// one and aborts whatever it left open, and the consumer resumes from the
// group's committed offsets.

import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnProcessor {
    /** Bound on the whole run, whatever STOP says. */
    static final Duration MAX_RUN = Duration.ofHours(3);
    /** One transaction in this many is aborted on purpose. */
    static final int ABORT_ONE_IN = 8;
    /** Kept short so that a transaction a dead instance left open is aborted soon. */
    static final int TRANSACTION_TIMEOUT_MS = 10_000;
    /** Records per transaction at most. */
    static final int MAX_POLL_RECORDS = 50;

    static PrintWriter out;

    static void log(String json) {
        out.println(json);
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], in = args[1], outTopic = args[2], group = args[3], name = args[4];
        Random random = new Random(Long.parseLong(args[5]));
        out = new PrintWriter(new OutputStreamWriter(
                new FileOutputStream(args[6], true), StandardCharsets.UTF_8), true);
        Path stop = Path.of(args[7]);
        long started = System.nanoTime();
        long txn = 0, committed = 0, aborted = 0, unknown = 0;
        int generation = 0;
        while (!Files.exists(stop) && System.nanoTime() - started < MAX_RUN.toNanos()) {
            generation++;
            try (KafkaProducer<String, String> producer = producer(bootstrap, name);
                 KafkaConsumer<String, String> consumer = consumer(bootstrap, group)) {
                producer.initTransactions();
                consumer.subscribe(List.of(in));
                while (!Files.exists(stop) && System.nanoTime() - started < MAX_RUN.toNanos()) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                    if (records.isEmpty()) continue;
                    String id = name + "-" + generation + "-" + (++txn);
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    Map<TopicPartition, Long> first = new HashMap<>();
                    producer.beginTransaction();
                    int n = 0;
                    for (ConsumerRecord<String, String> r : records) {
                        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                        first.putIfAbsent(tp, r.offset());
                        next.put(tp, new OffsetAndMetadata(r.offset() + 1));
                        producer.send(new ProducerRecord<>(outTopic, r.value(),
                                id + "|" + r.partition() + ":" + r.offset() + "|" + r.value()));
                        n++;
                    }
                    log("{\"txn\":" + quote(id) + ",\"sent\":" + n + "}");
                    boolean abort = random.nextInt(ABORT_ONE_IN) == 0;
                    String attempt = abort ? "abort" : "commit";
                    try {
                        if (abort) {
                            producer.flush();
                            producer.abortTransaction();
                            // Redo the input: back to where this transaction began.
                            for (Map.Entry<TopicPartition, Long> e : first.entrySet()) {
                                consumer.seek(e.getKey(), e.getValue());
                            }
                            aborted++;
                            log("{\"txn\":" + quote(id) + ",\"outcome\":\"aborted\"}");
                        } else {
                            producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                            producer.commitTransaction();
                            committed++;
                            log("{\"txn\":" + quote(id) + ",\"outcome\":\"committed\"}");
                        }
                    } catch (Exception e) {
                        unknown++;
                        log("{\"txn\":" + quote(id) + ",\"outcome\":\"unknown\",\"err\":"
                                + quote(attempt + ": " + e.getClass().getSimpleName()) + "}");
                        System.err.println("transaction " + id + " " + attempt + " failed: " + e
                                + "; new producer and consumer");
                        break;
                    }
                    if (txn % 100 == 0) {
                        System.err.println("transactions: " + committed + " committed, " + aborted
                                + " aborted, " + unknown + " unknown");
                    }
                }
            } catch (Exception e) {
                // initTransactions, poll or send failed (a fault): start over.
                System.err.println("processor generation " + generation + " failed: " + e);
                Thread.sleep(500);
            }
        }
        System.err.println("done: " + committed + " committed, " + aborted + " aborted, "
                + unknown + " unknown");
        out.close();
    }

    static KafkaProducer<String, String> producer(String bootstrap, String name) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, name);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, TRANSACTION_TIMEOUT_MS);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000);
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, MAX_POLL_RECORDS);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(c);
    }
}
