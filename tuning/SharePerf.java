import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The share-group benchmark of `tuning/compare.sh --share` (tuning/share.sh),
 * compiled there against Kafka's kafka-clients 4.4. Prints one JSON line on
 * stdout, with the field names of pinlog-loadgen's JSON where they mean the
 * same (records, duration_s, records_per_s, latency_us), so that
 * tuning/report_helpers.py reads it.
 *
 * <pre>
 * SharePerf drain   --bootstrap B --topic T --group G --kind K --consumers N
 *                   --records R [--record-bytes S] [--stall-s S]
 * SharePerf latency --bootstrap B --topic T --group G --kind K --consumers N
 *                   --rate X --seconds D --warmup W [--record-bytes S]
 *                   (both: [--consumer-props k=v,k=v] more consumer settings)
 * SharePerf features --bootstrap B
 * </pre>
 *
 * Kinds (K), N consumers of group G in one JVM, one thread each:
 * <ul>
 * <li>classic: KafkaConsumer, group.protocol=classic, auto commit (the
 * client's defaults otherwise);</li>
 * <li>classic-sync: the same without auto commit, commitSync() after every
 * poll that returned records;</li>
 * <li>share: KafkaShareConsumer, implicit acknowledgement (each poll accepts
 * what the one before it delivered);</li>
 * <li>share-explicit: share.acknowledgement.mode=explicit, acknowledge(r)
 * (ACCEPT) for every record and commitSync() after every poll that returned
 * records; a commit counts only if every partition's outcome is clean.</li>
 * </ul>
 *
 * Every run starts with a warm-up: a share group (pinlog's always, Kafka's
 * by default) starts reading a partition at its end the first time any
 * member reads it, and a fresh classic group with auto.offset.reset=latest
 * does the same. So a producer thread writes one marker record to every
 * partition every 200 ms until each partition delivered a marker to some
 * member and every member got one (classic: and every partition is owned
 * exactly once, each delivered a marker since its last assignment). Markers
 * are not measured.
 *
 * drain: then the members stop polling (classic members commitSync() their
 * positions, share members commitSync() what they hold), the producer
 * writes R records as fast as it can (acks=1, linger 5 ms, round-robin over
 * the partitions) and flushes, and the members poll again. The clock runs
 * from that moment until the last of the R records arrived (explicit kinds:
 * until the commitSync() that acknowledged it returned). records_per_s =
 * R / that time.
 *
 * latency: then the producer writes X records/s (linger 1 ms) for W + D
 * seconds while the members consume. Each record carries the time it was
 * due to be sent (open loop: a stall of the producer shows as latency).
 * For the records due in the last D seconds: latency_us is produce to
 * acknowledgement (the return of the commitSync() after the poll that
 * delivered it, for the -sync and -explicit kinds) or produce to delivery
 * (the return of poll(), for the others); delivery_latency_us is always
 * produce to delivery.
 *
 * Both count every measured record's deliveries by its sequence number
 * (in its value): duplicates (delivered more than once) and missing (never
 * delivered, after waiting up to --stall-s seconds without progress). Every
 * wait is bounded: a timeout gives an "error" field, never a hang. The
 * JSON's records_per_member, polls and records_per_poll_with_records count
 * every poll of the run, warm-up and markers included: they show how the
 * records were spread and batched, not a rate.
 *
 * features: the finalized share.version of the cluster (0 or none: share
 * groups are off).
 */
public class SharePerf {
  static final Map<String, String> A = new HashMap<>();

  public static void main(String[] argv) throws Exception {
    for (int i = 1; i + 1 < argv.length; i += 2) {
      if (!argv[i].startsWith("--")) throw new IllegalArgumentException("expected --name value: " + argv[i]);
      A.put(argv[i].substring(2), argv[i + 1]);
    }
    switch (argv.length > 0 ? argv[0] : "") {
      case "drain": run(false); break;
      case "latency": run(true); break;
      case "features": features(); break;
      default: throw new IllegalArgumentException("SharePerf drain|latency|features --name value ...");
    }
  }

  static String need(String k) {
    String v = A.get(k);
    if (v == null) throw new IllegalArgumentException("missing --" + k);
    return v;
  }

  static long num(String k, long dflt) {
    return A.containsKey(k) ? Long.parseLong(A.get(k)) : dflt;
  }

  static long nowMs() { return System.nanoTime() / 1_000_000L; }

  /** How long the warm-up may take, and the marker period. */
  static final long WARMUP_TIMEOUT_MS = 90_000, MARKER_PERIOD_MS = 200;
  /**
   * Value layout: kind (0 marker, 1 measured), this run's nonce, sequence
   * number, due time (System.nanoTime()). A record of another run (the
   * topic is shared by the runs; a group that was not fresh would deliver
   * them) is counted as foreign, never measured.
   */
  static final int HEADER_BYTES = 25;
  static final long NONCE = new Random().nextLong();

  // ------------------------------------------------------------ phases

  static final int WARM = 0, PAUSE = 1, RUN = 2, STOP = 3;
  static volatile int phase = WARM;

  // ------------------------------------------------------------ what was delivered

  /** Deliveries of the measured records, by sequence number; shared by the members. */
  static final class Tally {
    final BitSet seen = new BitSet();
    long distinct, duplicates, measuredMin = 0, measuredMax = Long.MAX_VALUE;
    long firstNs = -1, lastNs = -1;       // first and last new measured record (delivery or acknowledgement)
    long[] ackLat = new long[1 << 16], delLat = new long[1 << 16];
    int nLat;

    /** One poll's measured records: seqs[i] due at dues[i], delivered at del, acknowledged at ack. */
    synchronized void add(long[] seqs, long[] dues, int n, long del, long ack) {
      for (int i = 0; i < n; i++) {
        long s = seqs[i];
        if (s < measuredMin || s >= measuredMax) continue;
        int k = (int) (s - measuredMin);
        if (seen.get(k)) { duplicates++; continue; }
        seen.set(k);
        distinct++;
        if (firstNs < 0) firstNs = ack;
        lastNs = ack;
        if (nLat == ackLat.length) {
          ackLat = Arrays.copyOf(ackLat, nLat * 2);
          delLat = Arrays.copyOf(delLat, nLat * 2);
        }
        ackLat[nLat] = (ack - dues[i]) / 1000;
        delLat[nLat++] = (del - dues[i]) / 1000;
      }
    }

    synchronized void measure(long min, long max) { measuredMin = min; measuredMax = max; }
    synchronized long distinct() { return distinct; }
    synchronized long lastNs() { return lastNs; }
  }

  static final Tally TALLY = new Tally();

  // ------------------------------------------------------------ members

  static final class Member implements Runnable, ConsumerRebalanceListener {
    final int id;
    final String kind;
    final int parts;
    final boolean share, sync;
    volatile boolean paused, gotMarker;
    volatile String error;
    volatile int pollErrors, commitFailures;
    volatile String firstProblem;
    volatile long polls, fullPolls, records, foreign;
    final Set<Integer> owned = new HashSet<>();          // guarded by markerSeen's monitor (classic)
    final boolean[] markerSeen;                          // per partition, since this member owns it (classic)
    Thread thread;

    Member(int id, String kind, int parts, boolean[] markerSeen) {
      this.id = id; this.kind = kind; this.parts = parts; this.markerSeen = markerSeen;
      this.share = kind.startsWith("share");
      this.sync = kind.equals("classic-sync") || kind.equals("share-explicit");
    }

    Properties props() {
      Properties p = new Properties();
      p.put("bootstrap.servers", need("bootstrap"));
      p.put("group.id", need("group"));
      p.put("client.id", kind + "-" + id);
      p.put("key.deserializer", ByteArrayDeserializer.class.getName());
      p.put("value.deserializer", ByteArrayDeserializer.class.getName());
      if (share) {
        if (kind.equals("share-explicit")) p.put("share.acknowledgement.mode", "explicit");
      } else {
        p.put("group.protocol", "classic");
        p.put("auto.offset.reset", "latest");
        p.put("enable.auto.commit", Boolean.toString(!sync));
      }
      // --consumer-props k=v,k=v: more consumer settings (for a diagnosis;
      // the script passes none).
      for (String kv : A.getOrDefault("consumer-props", "").split(",")) {
        if (kv.isBlank()) continue;
        String[] x = kv.split("=", 2);
        if (x.length != 2) throw new IllegalArgumentException("--consumer-props: not k=v: " + kv);
        p.put(x[0], x[1]);
      }
      return p;
    }

    void problem(String what) {
      if (firstProblem == null) firstProblem = "member " + id + ": " + what;
    }

    @Override public void onPartitionsAssigned(Collection<TopicPartition> ps) {
      synchronized (markerSeen) { for (TopicPartition tp : ps) { owned.add(tp.partition()); markerSeen[tp.partition()] = false; } }
    }
    @Override public void onPartitionsRevoked(Collection<TopicPartition> ps) {
      synchronized (markerSeen) { for (TopicPartition tp : ps) owned.remove(tp.partition()); }
    }
    @Override public void onPartitionsLost(Collection<TopicPartition> ps) { onPartitionsRevoked(ps); }

    Set<Integer> owned() { synchronized (markerSeen) { return new HashSet<>(owned); } }

    /** What one poll returned, parsed before anything else happens. */
    final long[] seqs = new long[1 << 14], dues = new long[1 << 14];

    int parse(Iterable<ConsumerRecord<byte[], byte[]>> rs) {
      int n = 0;
      for (ConsumerRecord<byte[], byte[]> r : rs) {
        byte[] v = r.value();
        if (v == null || v.length < HEADER_BYTES) { problem("a record without the header at " + r.partition() + "/" + r.offset()); continue; }
        ByteBuffer b = ByteBuffer.wrap(v);
        byte k = b.get();
        if (b.getLong() != NONCE) { foreign++; continue; }
        if (k == 0) {
          gotMarker = true;
          synchronized (markerSeen) { if (share || owned.contains(r.partition())) markerSeen[r.partition()] = true; }
          continue;
        }
        if (n == seqs.length) { problem("more than " + seqs.length + " records in one poll"); break; }
        seqs[n] = b.getLong();
        dues[n++] = b.getLong();
      }
      return n;
    }

    @Override public void run() {
      try {
        if (share) runShare(); else runClassic();
      } catch (Throwable t) {
        if (phase != STOP) error = t.toString();
      }
    }

    void runClassic() throws Exception {
      try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(props())) {
        c.subscribe(List.of(need("topic")), this);
        while (phase != STOP) {
          if (phase == PAUSE) {
            if (!paused) { c.commitSync(Duration.ofSeconds(30)); paused = true; }
            Thread.sleep(1);
            continue;
          }
          ConsumerRecords<byte[], byte[]> rs;
          try {
            rs = c.poll(Duration.ofMillis(100));
          } catch (KafkaException e) {
            pollErrors++; problem("poll: " + e); Thread.sleep(100); continue;
          }
          long del = System.nanoTime();
          polls++;
          if (rs.isEmpty()) continue;
          fullPolls++;
          records += rs.count();
          int n = parse(rs);
          long ack = del;
          if (sync) {
            try {
              c.commitSync(Duration.ofSeconds(30));
            } catch (KafkaException e) {
              commitFailures++; problem("commitSync: " + e);
            }
            ack = System.nanoTime();
          }
          if (n > 0) TALLY.add(seqs, dues, n, del, ack);
        }
        c.close(CloseOptions.timeout(Duration.ofSeconds(5)));
      }
    }

    void runShare() throws Exception {
      try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(props())) {
        c.subscribe(List.of(need("topic")));
        while (phase != STOP) {
          if (phase == PAUSE) {
            if (!paused) { commit(c); paused = true; }
            Thread.sleep(1);
            continue;
          }
          ConsumerRecords<byte[], byte[]> rs;
          try {
            rs = c.poll(Duration.ofMillis(100));
          } catch (KafkaException e) {
            pollErrors++; problem("poll: " + e); Thread.sleep(100); continue;
          }
          long del = System.nanoTime();
          polls++;
          if (rs.isEmpty()) continue;
          fullPolls++;
          records += rs.count();
          int n = parse(rs);
          long ack = del;
          if (sync) {
            for (ConsumerRecord<byte[], byte[]> r : rs) c.acknowledge(r, AcknowledgeType.ACCEPT);
            commit(c);
            ack = System.nanoTime();
          }
          if (n > 0) TALLY.add(seqs, dues, n, del, ack);
        }
        c.close(Duration.ofSeconds(5));
      }
    }

    /** commitSync of a share consumer: counts a partition whose outcome is an error. */
    void commit(KafkaShareConsumer<byte[], byte[]> c) {
      try {
        Map<TopicIdPartition, Optional<KafkaException>> out = c.commitSync(Duration.ofSeconds(30));
        for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : out.entrySet()) {
          if (e.getValue().isPresent()) {
            commitFailures++;
            problem("commitSync of partition " + e.getKey().partition() + ": " + e.getValue().get());
          }
        }
      } catch (KafkaException e) {
        commitFailures++; problem("commitSync: " + e);
      }
    }

    void start() {
      thread = new Thread(this, "member-" + id);
      thread.setDaemon(true);
      thread.start();
    }
  }

  // ------------------------------------------------------------ producer

  static KafkaProducer<byte[], byte[]> producer(String linger) {
    Properties p = new Properties();
    p.put("bootstrap.servers", need("bootstrap"));
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    p.put("acks", "1");
    p.put("linger.ms", linger);
    p.put("batch.size", "65536");
    p.put("compression.type", "none");
    return new KafkaProducer<>(p);
  }

  static byte[] value(int size, byte kind, long seq, long due) {
    byte[] v = new byte[size];
    ByteBuffer.wrap(v).put(kind).putLong(NONCE).putLong(seq).putLong(due);
    return v;
  }

  // ------------------------------------------------------------ run

  static void run(boolean latency) throws Exception {
    String topic = need("topic"), kind = need("kind");
    if (!List.of("classic", "classic-sync", "share", "share-explicit").contains(kind))
      throw new IllegalArgumentException("--kind classic|classic-sync|share|share-explicit, not " + kind);
    int n = (int) num("consumers", 3);
    int size = (int) Math.max(HEADER_BYTES, num("record-bytes", 100));
    long stallMs = num("stall-s", 20) * 1000;
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("kind", kind);
    out.put("consumers", n);
    out.put("record_bytes", size);
    String error = null;

    KafkaProducer<byte[], byte[]> pr = producer(latency ? "1" : "5");
    final int parts = pr.partitionsFor(topic).size();
    out.put("partitions", parts);
    boolean[] markerSeen = new boolean[parts];
    List<Member> ms = new ArrayList<>();
    for (int i = 0; i < n; i++) { Member m = new Member(i, kind, parts, markerSeen); ms.add(m); m.start(); }

    // ---- warm-up: markers until every partition and every member has seen one
    long t0 = nowMs(), nextMarker = t0;
    boolean share = kind.startsWith("share");
    int needMembers = share ? Math.min(n, parts) : n;
    while (true) {
      long t = nowMs();
      if (t >= nextMarker) {
        for (int p = 0; p < parts; p++) pr.send(new ProducerRecord<>(topic, p, null, value(size, (byte) 0, -1, 0)));
        pr.flush();
        nextMarker = t + MARKER_PERIOD_MS;
      }
      boolean ok;
      synchronized (markerSeen) {
        ok = true;
        for (boolean b : markerSeen) ok &= b;
      }
      int got = 0;
      for (Member m : ms) if (m.gotMarker) got++;
      ok &= got >= needMembers;
      if (!share) {
        int[] cnt = new int[parts];
        for (Member m : ms) {
          Set<Integer> o = m.owned();
          if (o.isEmpty() && n <= parts) ok = false;
          for (int p : o) cnt[p]++;
        }
        for (int c : cnt) ok &= c == 1;
      }
      if (ok) break;
      for (Member m : ms) if (m.error != null) { error = "member " + m.id + ": " + m.error; break; }
      if (error != null) break;
      if (t - t0 > WARMUP_TIMEOUT_MS) {
        error = "warm-up: not every partition delivered a marker to a member (and every member got one) within "
            + WARMUP_TIMEOUT_MS / 1000 + " s";
        break;
      }
      Thread.sleep(10);
    }
    out.put("warmup_ms", nowMs() - t0);

    if (error == null && !latency) error = drain(pr, topic, parts, size, ms, out, stallMs);
    else if (error == null) error = tail(pr, topic, parts, size, ms, out, stallMs);

    phase = STOP;
    long distinct, dups;
    String ackLat, delLat;
    synchronized (TALLY) {
      distinct = TALLY.distinct;
      dups = TALLY.duplicates;
      ackLat = percentiles(Arrays.copyOf(TALLY.ackLat, TALLY.nLat));
      delLat = percentiles(Arrays.copyOf(TALLY.delLat, TALLY.nLat));
    }
    long want = out.containsKey("records") ? ((Number) out.get("records")).longValue() : 0;
    out.put("received", distinct);
    out.put("duplicates", dups);
    out.put("missing", want - distinct);
    long foreign = 0, polls = 0, fullPolls = 0, recs = 0;
    int pe = 0, cf = 0;
    String first = null;
    StringBuilder per = new StringBuilder();
    for (Member m : ms) {
      pe += m.pollErrors; cf += m.commitFailures; foreign += m.foreign;
      polls += m.polls; fullPolls += m.fullPolls; recs += m.records;
      if (first == null) first = m.firstProblem;
      if (first == null && m.error != null) first = "member " + m.id + ": " + m.error;
      per.append(per.length() > 0 ? "," : "").append(m.records);
    }
    out.put("foreign_records", foreign);
    out.put("poll_errors", pe);
    out.put("commit_failures", cf);
    out.put("first_problem", first);
    out.put("records_per_member", per.toString());
    out.put("polls", polls);
    out.put("records_per_poll_with_records", fullPolls == 0 ? null : round1((double) recs / fullPolls));
    out.put("errors", pe + cf + (error == null ? 0 : 1));
    out.put("error", error);
    StringBuilder b = new StringBuilder(json(out));
    b.setLength(b.length() - 1);
    if (latency) b.append(",\"latency_us\":").append(ackLat).append(",\"delivery_latency_us\":").append(delLat);
    b.append('}');
    System.out.println(b);
    System.out.flush();

    pr.close(Duration.ofSeconds(5));
    long deadline = nowMs() + 15000;
    for (Member m : ms) m.thread.join(Math.max(1, deadline - nowMs()));
    Runtime.getRuntime().halt(error == null ? 0 : 3);
  }

  /** S1: pause the members, write R records, let them drain it. */
  static String drain(KafkaProducer<byte[], byte[]> pr, String topic, int parts, int size, List<Member> ms,
                      Map<String, Object> out, long stallMs) throws Exception {
    long r = num("records", 0);
    if (r <= 0 || r > Integer.MAX_VALUE) return "--records must be between 1 and " + Integer.MAX_VALUE;
    out.put("records", r);
    phase = PAUSE;
    long t = nowMs();
    while (true) {
      boolean all = true;
      for (Member m : ms) all &= m.paused || m.error != null;
      if (all) break;
      if (nowMs() - t > 60_000) return "the members did not pause (commit) within 60 s";
      Thread.sleep(5);
    }
    TALLY.measure(0, r);
    AtomicLong failed = new AtomicLong();
    long f0 = System.nanoTime();
    for (long i = 0; i < r; i++) {
      pr.send(new ProducerRecord<>(topic, (int) (i % parts), null, value(size, (byte) 1, i, 0)),
          (md, e) -> { if (e != null) failed.incrementAndGet(); });
    }
    pr.flush();
    double fillS = (System.nanoTime() - f0) / 1e9;
    out.put("fill_s", round3(fillS));
    out.put("fill_records_per_s", round1(r / fillS));
    out.put("fill_errors", failed.get());
    if (failed.get() > 0) return failed.get() + " of the backlog's records were not written";

    long start = System.nanoTime();
    phase = RUN;
    long lastProgress = nowMs(), seen = 0;
    String error = null;
    while (true) {
      long d = TALLY.distinct();
      if (d >= r) break;
      if (d > seen) { seen = d; lastProgress = nowMs(); }
      if (nowMs() - lastProgress > stallMs) { error = "stalled: " + d + " of " + r + " records delivered, none for " + stallMs / 1000 + " s"; break; }
      for (Member m : ms) if (m.error != null) { error = "member " + m.id + ": " + m.error; break; }
      if (error != null) break;
      Thread.sleep(1);
    }
    long last = TALLY.lastNs();
    double s = ((last > start ? last : System.nanoTime()) - start) / 1e9;
    synchronized (TALLY) {
      out.put("first_record_ms", TALLY.firstNs < 0 ? null : round1((TALLY.firstNs - start) / 1e6));
    }
    out.put("duration_s", round3(s));
    out.put("records_per_s", error == null ? round1(r / s) : null);
    // Keep polling a moment: a record delivered twice shows up as a duplicate.
    Thread.sleep(1000);
    return error;
  }

  /** S2: X records/s for W + D seconds while the members consume. */
  static String tail(KafkaProducer<byte[], byte[]> pr, String topic, int parts, int size, List<Member> ms,
                     Map<String, Object> out, long stallMs) throws Exception {
    long rate = num("rate", 0), secs = num("seconds", 0), warm = num("warmup", 0);
    if (rate <= 0 || secs <= 0) return "--rate and --seconds must be positive";
    long first = rate * warm, total = rate * (warm + secs);
    out.put("rate", rate);
    out.put("seconds", secs);
    out.put("warmup_s", warm);
    out.put("records", total - first);
    TALLY.measure(first, total);
    phase = RUN;
    AtomicLong failed = new AtomicLong();
    long t0 = System.nanoTime(), behindMax = 0;
    for (long i = 0; i < total; i++) {
      long due = t0 + i * 1_000_000_000L / rate;
      long wait = due - System.nanoTime();
      if (wait > 0) Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
      else behindMax = Math.max(behindMax, -wait);
      pr.send(new ProducerRecord<>(topic, (int) (i % parts), null, value(size, (byte) 1, i, due)),
          (md, e) -> { if (e != null) failed.incrementAndGet(); });
    }
    pr.flush();
    out.put("producer_behind_max_ms", round1(behindMax / 1e6));
    out.put("produce_errors", failed.get());
    long lastProgress = nowMs(), seen = 0;
    while (TALLY.distinct() < total - first) {
      long d = TALLY.distinct();
      if (d > seen) { seen = d; lastProgress = nowMs(); }
      if (nowMs() - lastProgress > stallMs) {
        return "stalled: " + d + " of " + (total - first) + " measured records delivered, none for " + stallMs / 1000 + " s after the producer ended";
      }
      for (Member m : ms) if (m.error != null) return "member " + m.id + ": " + m.error;
      Thread.sleep(5);
    }
    Thread.sleep(1000);
    return failed.get() > 0 ? failed.get() + " records were not written" : null;
  }

  // ------------------------------------------------------------ features

  static void features() throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", need("bootstrap"));
    try (Admin admin = Admin.create(p)) {
      FinalizedVersionRange r = admin.describeFeatures().featureMetadata().get()
          .finalizedFeatures().get("share.version");
      System.out.println(r == null ? "none" : Short.toString(r.maxVersionLevel()));
    }
  }

  // ------------------------------------------------------------ output

  /** p50 ... max of the microseconds in xs (sorted here), as JSON (TxnPerf's format). */
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

  static double round1(double x) { return Math.round(x * 10) / 10.0; }
  static double round3(double x) { return Math.round(x * 1000) / 1000.0; }

  static String json(Map<String, Object> m) {
    StringBuilder b = new StringBuilder("{");
    for (Map.Entry<String, Object> e : m.entrySet()) {
      if (b.length() > 1) b.append(',');
      b.append('"').append(e.getKey()).append("\":");
      Object v = e.getValue();
      if (v == null) b.append("null");
      else if (v instanceof Number) b.append(v);
      else b.append('"').append(v.toString().replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ")).append('"');
    }
    return b.append('}').toString();
  }
}
