// Transactions through Apache Kafka's Java client (kafka-clients 4.4),
// against pinlog: tests/transactions.rs runs it.
//
//   java TxnCheck <bootstrap> <prefix> [replication factor, default 1]
//
// With topics <prefix>-in and <prefix>-out (2 partitions each) it checks:
// 1. commit and abort: a read_committed consumer sees exactly the committed
//    transactions' records, a read_uncommitted one sees the aborted ones too;
// 2. read-process-write: records consumed from -in are written to -out with
//    their offsets sent to the transaction (sendOffsetsToTransaction with the
//    consumer's group metadata); after the commit the group's committed
//    offsets are those, and after an abort they are not;
// 3. zombie fencing: a second producer with the same transactional.id fences
//    the first, whose open transaction is aborted, and whose next send,
//    sendOffsetsToTransaction and commit fail with ProducerFencedException.
// Each check prints "ok <name>"; any failure exits non-zero with a message.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnCheck {
    static final Duration STEP = Duration.ofSeconds(60);

    static void fail(String why) {
        System.err.println("FAIL: " + why);
        System.exit(1);
    }

    static KafkaProducer<String, String> producer(String bootstrap, String txnId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group, String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    /// Every value of `topic` a consumer with `isolation` reads, up to the end
    /// offsets it sees (read_committed: the LSO).
    static List<String> readAll(String bootstrap, String topic, String isolation) {
        try (KafkaConsumer<String, String> c = consumer(bootstrap, "reader-" + UUID.randomUUID(), isolation)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (var info : c.partitionsFor(topic, STEP)) tps.add(new TopicPartition(topic, info.partition()));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, STEP);
            List<String> values = new ArrayList<>();
            long deadline = System.currentTimeMillis() + STEP.toMillis();
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) if (c.position(tp, STEP) < end.get(tp)) done = false;
                if (done) break;
                if (System.currentTimeMillis() > deadline) fail("reading " + topic + " (" + isolation + ") did not reach " + end);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) values.add(r.value());
            }
            Collections.sort(values);
            return values;
        }
    }

    static void expectFenced(String what, Runnable r) {
        try {
            r.run();
        } catch (ProducerFencedException | InvalidProducerEpochException e) {
            return;
        } catch (KafkaException e) {
            Throwable c = e;
            while (c != null) {
                if (c instanceof ProducerFencedException || c instanceof InvalidProducerEpochException) return;
                c = c.getCause();
            }
            fail(what + ": expected ProducerFencedException, got " + e);
        }
        fail(what + ": the fenced producer was not refused");
    }

    /** The transaction version the producer uses (KIP-890): 2 once the
     *  brokers finalize transaction.version 2, else 1. */
    static int transactionVersion(KafkaProducer<?, ?> p) throws Exception {
        java.lang.reflect.Field f = KafkaProducer.class.getDeclaredField("transactionManager");
        f.setAccessible(true);
        Object tm = f.get(p);
        boolean v2 = (boolean) tm.getClass().getMethod("isTransactionV2Enabled").invoke(tm);
        return v2 ? 2 : 1;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        short rf = args.length > 2 ? Short.parseShort(args[2]) : 1;
        String in = prefix + "-in", out = prefix + "-out";
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(in, 2, rf), new NewTopic(out, 2, rf))).all().get();
        }

        // 1. Commit and abort.
        try (KafkaProducer<String, String> p = producer(bootstrap, prefix + "-basic")) {
            p.initTransactions();
            System.out.println("transaction version " + transactionVersion(p));
            p.beginTransaction();
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(out, "k" + i, "committed-1-" + i));
            p.commitTransaction();
            p.beginTransaction();
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(out, "k" + i, "aborted-" + i));
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(out, "k" + i, "committed-2-" + i));
            p.commitTransaction();
        }
        List<String> committed = readAll(bootstrap, out, "read_committed");
        if (committed.size() != 20 || committed.stream().anyMatch(v -> v.startsWith("aborted")))
            fail("read_committed read " + committed);
        List<String> uncommitted = readAll(bootstrap, out, "read_uncommitted");
        if (uncommitted.size() != 30) fail("read_uncommitted read " + uncommitted.size() + " records: " + uncommitted);
        System.out.println("ok commit-and-abort");

        // 2. Read-process-write with offsets in the transaction.
        try (KafkaProducer<String, String> p = producer(bootstrap, prefix + "-input")) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 20; i++) p.send(new ProducerRecord<>(in, "k" + i, "input-" + i));
            p.commitTransaction();
        }
        String group = prefix + "-processor";
        try (KafkaProducer<String, String> p = producer(bootstrap, prefix + "-processor");
             KafkaConsumer<String, String> c = consumer(bootstrap, group, "read_committed")) {
            p.initTransactions();
            c.subscribe(List.of(in));
            List<ConsumerRecord<String, String>> batch = new ArrayList<>();
            long deadline = System.currentTimeMillis() + STEP.toMillis();
            while (batch.size() < 20) {
                if (System.currentTimeMillis() > deadline) fail("consumed only " + batch.size() + " of 20 inputs");
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) batch.add(r);
            }
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (ConsumerRecord<String, String> r : batch)
                offsets.merge(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1),
                        (a, b) -> a.offset() > b.offset() ? a : b);
            // An aborted attempt first: its offsets must not count.
            p.beginTransaction();
            p.send(new ProducerRecord<>(out, "x", "processed-aborted"));
            Map<TopicPartition, OffsetAndMetadata> early = new HashMap<>();
            for (TopicPartition tp : offsets.keySet()) early.put(tp, new OffsetAndMetadata(1));
            p.sendOffsetsToTransaction(early, c.groupMetadata());
            p.abortTransaction();
            p.beginTransaction();
            for (ConsumerRecord<String, String> r : batch) p.send(new ProducerRecord<>(out, r.key(), "processed-" + r.value()));
            p.sendOffsetsToTransaction(offsets, c.groupMetadata());
            p.commitTransaction();
            Map<TopicPartition, OffsetAndMetadata> stored = c.committed(offsets.keySet(), STEP);
            for (var e : offsets.entrySet()) {
                OffsetAndMetadata s = stored.get(e.getKey());
                if (s == null || s.offset() != e.getValue().offset())
                    fail("committed offset of " + e.getKey() + " is " + s + ", expected " + e.getValue());
            }
        }
        List<String> processed = readAll(bootstrap, out, "read_committed");
        long outputs = processed.stream().filter(v -> v.startsWith("processed-input-")).count();
        if (outputs != 20 || processed.contains("processed-aborted"))
            fail("read-process-write output: " + processed);
        System.out.println("ok read-process-write");

        // 3. Zombie fencing.
        String zombieId = prefix + "-zombie";
        KafkaProducer<String, String> zombie = producer(bootstrap, zombieId);
        zombie.initTransactions();
        zombie.beginTransaction();
        zombie.send(new ProducerRecord<>(out, "z", "zombie-open")).get();
        try (KafkaProducer<String, String> fresh = producer(bootstrap, zombieId)) {
            // Fences the zombie and aborts its open transaction.
            fresh.initTransactions();
            fresh.beginTransaction();
            fresh.send(new ProducerRecord<>(out, "z", "fresh"));
            fresh.commitTransaction();
        }
        expectFenced("send", () -> {
            try {
                zombie.send(new ProducerRecord<>(out, "z", "zombie-late")).get();
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof KafkaException ke) throw ke;
                throw new RuntimeException(e);
            }
        });
        expectFenced("commit", zombie::commitTransaction);
        zombie.close(Duration.ZERO);
        List<String> afterFence = readAll(bootstrap, out, "read_committed");
        if (afterFence.contains("zombie-open") || afterFence.contains("zombie-late") || !afterFence.contains("fresh"))
            fail("after fencing, read_committed read " + afterFence);
        System.out.println("ok zombie-fencing");
    }
}
