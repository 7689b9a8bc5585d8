import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.errors.*;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The transactional load of `tuning/compare.sh --transactional`
 * (tuning/transactional.sh), compiled there against Kafka's kafka-clients.
 * Prints one JSON line on stdout, with the field names of pinlog-loadgen's
 * JSON where they mean the same (records, bytes, duration_s, latency_us),
 * so that tuning/report_helpers.py reads both.
 *
 * <pre>
 * TxnPerf produce --bootstrap B --topic T --producers N --txn-records K
 *                 --record-bytes S --span P (--seconds D --warmup W | --records R)
 *                 --id-prefix X [--abort-every A] [--linger-ms L] [--batch-bytes Z]
 * TxnPerf consume --bootstrap B --topic T --isolation read_committed|read_uncommitted
 * TxnPerf features --bootstrap B
 * </pre>
 *
 * produce: N threads, each its own producer with transactional.id X-i,
 * loop begin, K sends, commit. Each transaction spans P partitions of T
 * (the K records dealt over them), starting one span further on each
 * time, so every partition gets the same share. With --seconds, the
 * measured figures are the transactions whose commit returned in the D
 * seconds after the first W; with --records, each thread writes R/N
 * records and everything counts (a fill). --abort-every A aborts every
 * A-th transaction instead of committing it, after sending its records
 * (the fill of the read_committed test). A transaction that fails is
 * aborted and counted in the errors, and a fill writes it again. Commit
 * latency is the time commitTransaction()
 * takes to return: it first flushes the transaction's unsent records,
 * then ends the transaction.
 *
 * consume: assign() every partition, read from the beginning to the end
 * offsets (taken at the start, under the same isolation level), time it.
 *
 * features: the finalized transaction.version of the cluster.
 */
public class TxnPerf {
  public static void main(String[] argv) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (int i = 1; i + 1 < argv.length; i += 2) {
      if (!argv[i].startsWith("--")) throw new IllegalArgumentException("expected --name value: " + argv[i]);
      a.put(argv[i].substring(2), argv[i + 1]);
    }
    switch (argv.length > 0 ? argv[0] : "") {
      case "produce": produce(a); break;
      case "consume": consume(a); break;
      case "features": features(a); break;
      default: throw new IllegalArgumentException("TxnPerf produce|consume|features --name value ...");
    }
  }

  static String need(Map<String, String> a, String k) {
    String v = a.get(k);
    if (v == null) throw new IllegalArgumentException("missing --" + k);
    return v;
  }

  static int num(Map<String, String> a, String k, int dflt) {
    return a.containsKey(k) ? Integer.parseInt(a.get(k)) : dflt;
  }

  // ------------------------------------------------------------ produce

  /** What one producer thread did. Latencies in microseconds. */
  static final class Worker {
    long measuredRecords, measuredTxns, otherRecords, abortedTxns, abortedRecords;
    long[] commitUs = new long[1024], txnUs = new long[1024];
    int nLat;
    final Map<String, Long> errors = new TreeMap<>();

    void latency(long commit, long txn) {
      if (nLat == commitUs.length) {
        commitUs = Arrays.copyOf(commitUs, nLat * 2);
        txnUs = Arrays.copyOf(txnUs, nLat * 2);
      }
      commitUs[nLat] = commit;
      txnUs[nLat++] = txn;
    }

    void error(Exception e) {
      errors.merge(e.getClass().getSimpleName(), 1L, Long::sum);
    }
  }

  static void produce(Map<String, String> a) throws Exception {
    String bootstrap = need(a, "bootstrap"), topic = need(a, "topic"), prefix = need(a, "id-prefix");
    int producers = num(a, "producers", 4), k = num(a, "txn-records", 100), size = num(a, "record-bytes", 1024);
    int span = num(a, "span", 3), abortEvery = num(a, "abort-every", 0);
    long seconds = num(a, "seconds", 0), warmup = num(a, "warmup", 0), fill = num(a, "records", 0);
    if ((seconds > 0) == (fill > 0)) throw new IllegalArgumentException("give one of --seconds, --records");

    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("enable.idempotence", "true");
    p.put("acks", "all"); // what idempotence requires anyway; said here so that the command shows it
    p.put("linger.ms", a.getOrDefault("linger-ms", "5"));
    p.put("batch.size", a.getOrDefault("batch-bytes", "65536"));
    p.put("compression.type", "none");
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());

    final int partitions;
    try (Producer<byte[], byte[]> probe = new KafkaProducer<>(p)) {
      partitions = probe.partitionsFor(topic).size();
    }
    final int span_ = Math.min(span, partitions);
    final long t0 = System.nanoTime();
    final long measureFrom = t0 + warmup * 1_000_000_000L, end = measureFrom + seconds * 1_000_000_000L;
    final long perThread = fill > 0 ? fill / producers : 0;
    byte[] value = new byte[size];
    new Random(1).nextBytes(value);

    Worker[] ws = new Worker[producers];
    Thread[] ts = new Thread[producers];
    for (int i = 0; i < producers; i++) {
      final int id = i;
      final Worker w = ws[i] = new Worker();
      Properties pi = (Properties) p.clone();
      pi.put("transactional.id", prefix + "-" + i);
      ts[i] = new Thread(() -> {
        try {
          run(w, id, pi, topic, partitions, span_, k, value, abortEvery, fill, perThread, measureFrom, end);
        } catch (RuntimeException e) {
          // Counted, so that a thread that died shows in the errors.
          w.error(e);
          System.err.println("producer " + id + " stopped: " + e);
        }
      }, "txn-" + i);
      ts[i].start();
    }
    for (Thread t : ts) t.join();
    long wall = System.nanoTime() - t0;

    long recs = 0, txns = 0, other = 0, abortedTxns = 0, abortedRecs = 0;
    int nLat = 0;
    Map<String, Long> errors = new TreeMap<>();
    for (Worker w : ws) {
      recs += w.measuredRecords; txns += w.measuredTxns; other += w.otherRecords;
      abortedTxns += w.abortedTxns; abortedRecs += w.abortedRecords;
      nLat += w.nLat;
      w.errors.forEach((c, n) -> errors.merge(c, n, Long::sum));
    }
    long[] commit = new long[nLat], whole = new long[nLat];
    int at = 0;
    for (Worker w : ws) {
      System.arraycopy(w.commitUs, 0, commit, at, w.nLat);
      System.arraycopy(w.txnUs, 0, whole, at, w.nLat);
      at += w.nLat;
    }
    double dur = fill > 0 ? wall / 1e9 : seconds;
    long bytes = recs * size;
    long errs = errors.values().stream().mapToLong(Long::longValue).sum();
    StringBuilder errJson = new StringBuilder("{");
    errors.forEach((c, n) -> errJson.append(errJson.length() > 1 ? "," : "").append('"').append(c).append("\":").append(n));
    errJson.append('}');
    // warmup_records: committed but outside the measured window (warm-up,
    // and commits that returned after it); the CPU per GB counts them.
    System.out.printf(Locale.ROOT,
        "{\"records\":%d,\"bytes\":%d,\"duration_s\":%.3f,\"records_per_s\":%.1f,\"mb_per_s\":%.2f,"
            + "\"transactions\":%d,\"txn_per_s\":%.1f,\"warmup_records\":%d,\"aborted_transactions\":%d,"
            + "\"aborted_records\":%d,\"producers\":%d,\"txn_records\":%d,\"span\":%d,\"partitions\":%d,"
            + "\"wall_s\":%.3f,\"errors\":%d,\"error_kinds\":%s,\"latency_us\":%s,\"txn_latency_us\":%s}%n",
        recs, bytes, dur, recs / dur, bytes / dur / 1e6, txns, txns / dur, other, abortedTxns, abortedRecs,
        producers, k, span_, partitions, wall / 1e9, errs, errJson, percentiles(commit), percentiles(whole));
    if (errs > 0) System.exit(4);
  }

  /** One producer thread's loop (see the class comment). */
  static void run(Worker w, int id, Properties pi, String topic, int partitions, int span, int k, byte[] value,
      int abortEvery, long fill, long perThread, long measureFrom, long end) {
    Producer<byte[], byte[]> pr = new KafkaProducer<>(pi);
    pr.initTransactions();
    long txn = 0, done = 0;
    // Producer i starts i spans in, so the producers' transactions
    // begin on different partitions.
    int first = (id * span) % partitions;
    while (fill > 0 ? done < perThread : System.nanoTime() < end) {
      long b = System.nanoTime();
      boolean abort = abortEvery > 0 && (txn + 1) % abortEvery == 0;
      int n = fill > 0 ? (int) Math.min(k, perThread - done) : k;
      try {
        pr.beginTransaction();
        for (int j = 0; j < n; j++) {
          pr.send(new ProducerRecord<>(topic, (first + j % span) % partitions, null, value));
        }
        long c = System.nanoTime();
        if (abort) {
          // Sent first, so that the aborted records are in the log for
          // read_committed to skip (unsent ones the client just drops).
          pr.flush();
          pr.abortTransaction();
          w.abortedTxns++;
          w.abortedRecords += n;
        } else {
          pr.commitTransaction();
          long e = System.nanoTime();
          if (fill > 0 || (e > measureFrom && e <= end)) {
            w.measuredRecords += n;
            w.measuredTxns++;
            w.latency((e - c) / 1000, (e - b) / 1000);
          } else {
            w.otherRecords += n;
          }
        }
        done += n;
      } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException
          | UnsupportedVersionException | InvalidProducerEpochException e) {
        // Fatal for this producer: a new one with the same id fences it
        // and carries on (its initTransactions aborts what was open).
        w.error(e);
        System.err.println("producer " + id + ": " + e);
        pr.close(Duration.ZERO);
        pr = new KafkaProducer<>(pi);
        pr.initTransactions();
      } catch (KafkaException | IllegalStateException e) {
        // Abortable, a timeout, or a state this producer will not go on
        // from: abort, and go on with the next transaction (or a new
        // producer).
        w.error(e);
        System.err.println("producer " + id + ": " + e);
        try {
          pr.abortTransaction();
        } catch (KafkaException | IllegalStateException e2) {
          w.error(e2);
          System.err.println("producer " + id + " (abort): " + e2);
          pr.close(Duration.ZERO);
          pr = new KafkaProducer<>(pi);
          pr.initTransactions();
        }
      }
      txn++;
      first = (first + span) % partitions;
    }
    pr.close();
  }

  /** p50 ... max of the microseconds in xs (sorted here), as JSON. */
  static String percentiles(long[] xs) {
    if (xs.length == 0) return "{}";
    Arrays.sort(xs);
    double sum = 0;
    for (long x : xs) sum += x;
    return String.format(Locale.ROOT,
        "{\"count\":%d,\"mean\":%.1f,\"p50\":%d,\"p90\":%d,\"p99\":%d,\"p999\":%d,\"max\":%d}",
        xs.length, sum / xs.length, at(xs, 0.50), at(xs, 0.90), at(xs, 0.99), at(xs, 0.999), xs[xs.length - 1]);
  }

  /** The nearest-rank percentile q of sorted xs. */
  static long at(long[] xs, double q) {
    int i = (int) Math.ceil(q * xs.length) - 1;
    return xs[Math.max(0, Math.min(xs.length - 1, i))];
  }

  // ------------------------------------------------------------ consume

  static void consume(Map<String, String> a) throws Exception {
    String bootstrap = need(a, "bootstrap"), topic = need(a, "topic"), iso = need(a, "isolation");
    long timeoutMs = num(a, "timeout-ms", 20000);
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("isolation.level", iso);
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    // The fetch settings of compare.sh's AssignConsumerPerf (those of
    // Kafka's ConsumerPerformance).
    p.put("max.partition.fetch.bytes", "1048576");
    p.put("receive.buffer.bytes", "2097152");
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (PartitionInfo pi : c.partitionsFor(topic, Duration.ofSeconds(30)))
        tps.add(new TopicPartition(topic, pi.partition()));
      c.assign(tps);
      // Under read_committed these are the last stable offsets. The
      // producers are done, so every transaction is ended and they equal
      // the high watermarks.
      Map<TopicPartition, Long> ends = c.endOffsets(tps, Duration.ofSeconds(30));
      c.seekToBeginning(tps);
      long n = 0, bytes = 0, start = System.nanoTime(), last = start;
      Set<TopicPartition> open = new HashSet<>(tps);
      open.removeIf(tp -> ends.get(tp) == 0);
      while (!open.isEmpty()) {
        ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(100));
        long now = System.nanoTime();
        for (ConsumerRecord<byte[], byte[]> r : rs) {
          n++;
          bytes += r.value() == null ? 0 : r.value().length;
        }
        if (!rs.isEmpty()) last = now;
        else if ((now - last) / 1_000_000 > timeoutMs) break;
        // The position moves past the control records (commit and abort
        // markers) too, so it reaches the end offset.
        open.removeIf(tp -> c.position(tp) >= ends.get(tp));
      }
      double s = (System.nanoTime() - start) / 1e9;
      long endSum = ends.values().stream().mapToLong(Long::longValue).sum();
      System.out.printf(Locale.ROOT,
          "{\"records\":%d,\"bytes\":%d,\"duration_s\":%.3f,\"records_per_s\":%.1f,\"mb_per_s\":%.2f,"
              + "\"isolation\":\"%s\",\"partitions\":%d,\"end_offsets\":%d,\"complete\":%b}%n",
          n, bytes, s, n / s, bytes / s / 1e6, iso, tps.size(), endSum, open.isEmpty());
      if (!open.isEmpty()) System.exit(3);
    }
  }

  // ------------------------------------------------------------ features

  static void features(Map<String, String> a) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", need(a, "bootstrap"));
    try (Admin admin = Admin.create(p)) {
      FinalizedVersionRange r = admin.describeFeatures().featureMetadata().get()
          .finalizedFeatures().get("transaction.version");
      System.out.println(r == null ? "none" : Short.toString(r.maxVersionLevel()));
    }
  }
}
