// The fault suite's Java producer (kafka-clients 4.4), driven by
// tests/faults.rs, which compiles it with
//   javac -cp "<kafka libs>/*" -d <tmp> FaultProducer.java
// and runs `java -cp "<tmp>:<kafka libs>/*" FaultProducer BOOTSTRAP TOPIC NAME RATE OUT STOP`.
//
// Kafka's default producer settings (since 3.0: acks=all, idempotence),
// about RATE records a second, each value a unique id "NAME-<n>", until the
// file STOP exists. One JSON line per outcome in OUT, in the format of
// tests/faults/workload.py's producer (tests/faults/checker.py reads both):
//   {"id": ..., "p": P, "o": OFFSET}          acknowledged
//   {"id": ..., "err": NAME, "fatal": bool}   failed
// A fatal error (the producer cannot go on) ends this producer after it is
// logged, and a new one takes over, as an application would.

import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringSerializer;

public class FaultProducer {
    /** Bound on the whole run, whatever STOP says. */
    static final Duration MAX_RUN = Duration.ofHours(3);
    /** How long a record may wait for its acknowledgement (then it is failed). */
    static final int DELIVERY_TIMEOUT_MS = 60_000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], name = args[2];
        double rate = Double.parseDouble(args[3]);
        Path stop = Path.of(args[5]);
        PrintWriter out = new PrintWriter(new OutputStreamWriter(
                new FileOutputStream(args[4], true), StandardCharsets.UTF_8), true);
        long started = System.nanoTime();
        long intervalNanos = (long) (1e9 / rate);
        AtomicLong acked = new AtomicLong(), failed = new AtomicLong();
        AtomicBoolean fatal = new AtomicBoolean();
        long n = 0;
        long nextSend = System.nanoTime();
        long lastProgress = System.nanoTime();
        KafkaProducer<String, String> producer = newProducer(bootstrap);
        while (!Files.exists(stop) && System.nanoTime() - started < MAX_RUN.toNanos()) {
            if (fatal.get()) {
                producer.close(Duration.ofSeconds(10));
                System.err.println("fatal error: new producer");
                producer = newProducer(bootstrap);
                fatal.set(false);
            }
            long now = System.nanoTime();
            if (now < nextSend) {
                Thread.sleep(Math.min(50, (nextSend - now) / 1_000_000 + 1));
                continue;
            }
            String id = name + "-" + n;
            n++;
            nextSend += intervalNanos;
            try {
                producer.send(new ProducerRecord<>(topic, null, id), (md, e) -> {
                    if (e == null) {
                        acked.incrementAndGet();
                        line(out, "{\"id\":\"" + id + "\",\"p\":" + md.partition()
                                + ",\"o\":" + md.offset() + "}");
                    } else {
                        failed.incrementAndGet();
                        boolean isFatal = isFatal(e);
                        if (isFatal) {
                            fatal.set(true);
                        }
                        line(out, "{\"id\":\"" + id + "\",\"err\":\"" + e.getClass().getSimpleName()
                                + "\",\"fatal\":" + isFatal + "}");
                    }
                });
            } catch (RuntimeException e) {
                // send() itself throws once the producer is in a fatal state.
                failed.incrementAndGet();
                fatal.set(true);
                line(out, "{\"id\":\"" + id + "\",\"err\":\"" + e.getClass().getSimpleName()
                        + "\",\"fatal\":true}");
            }
            if (System.nanoTime() - lastProgress > 5_000_000_000L) {
                lastProgress = System.nanoTime();
                System.err.printf("%s: sent %d, acked %d, failed %d%n", name, n, acked.get(), failed.get());
            }
        }
        producer.close(Duration.ofSeconds(90));
        System.err.printf("%s done: sent %d, acked %d, failed %d%n", name, n, acked.get(), failed.get());
        out.close();
    }

    static boolean isFatal(Exception e) {
        return e instanceof OutOfOrderSequenceException || e instanceof ProducerFencedException
                || e instanceof AuthorizationException;
    }

    static synchronized void line(PrintWriter out, String json) {
        out.println(json);
    }

    static KafkaProducer<String, String> newProducer(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, DELIVERY_TIMEOUT_MS);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        return new KafkaProducer<>(p);
    }
}
