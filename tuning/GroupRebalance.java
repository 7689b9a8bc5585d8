import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The consumer-group rebalance benchmark of `tuning/compare.sh --groups`
 * (tuning/groups.sh), compiled there against Kafka's kafka-clients 4.4.
 *
 * <pre>
 * GroupRebalance run --bootstrap B --topic T --partitions P --group G
 *                    --protocol consumer|classic --members N --event join|crash
 *                    [--victim-pid PID --victim-file F] [--rate R]
 *                    [--stable-timeout-s S] [--event-timeout-s S]
 *                    [--session-ms MS --heartbeat-ms MS]   (classic only)
 * GroupRebalance member --bootstrap B --topic T --group G --protocol ... --file F
 * </pre>
 *
 * run: one JVM with N consumer threads (one KafkaConsumer each) in group G
 * subscribed to T, and one producer thread writing R records/s round-robin
 * over the P partitions (so that every member has records to consume). Each
 * member records its assignment (a ConsumerRebalanceListener) and the time
 * and record count of every poll that returned records. A coordinating
 * thread waits until the group is stable: every partition owned by exactly
 * one member (the N threads, plus for crash the member in the separate JVM
 * whose assignment --victim-file holds), every member owning at least one,
 * for 5 s on end. Then the event:
 *   join   one more consumer thread starts;
 *   crash  the member in the other JVM (--victim-pid, started by the
 *          script) is killed with SIGKILL (ProcessHandle.destroyForcibly).
 * The window ends when every partition is owned by exactly one of the
 * live members (for join: and the new member owns at least floor(P/(N+1))).
 * Prints one JSON line: window_ms, records_per_s in the window and in the
 * 5 s before the event (while the group was stable), and the longest consumption gap
 * among the members whose assignment did not change in the window (and the
 * same members' longest gap in those 5 s, for scale). Every wait is
 * bounded: a timeout gives an "error" field, never a hang.
 *
 * Classic members use the cooperative-sticky assignor (incremental
 * rebalances: only the partitions that move are revoked), the classic
 * protocol's best case for this benchmark; consumer-protocol members use
 * the broker's default assignor (uniform on both brokers).
 *
 * member: one consumer (the crash victim), which writes its assignment to
 * --file (one partition number a line, replaced atomically) on every
 * change, and polls until it is killed.
 */
public class GroupRebalance {
  static Map<String, String> A = new HashMap<>();

  public static void main(String[] argv) throws Exception {
    for (int i = 1; i + 1 < argv.length; i += 2) {
      if (!argv[i].startsWith("--")) throw new IllegalArgumentException("expected --name value: " + argv[i]);
      A.put(argv[i].substring(2), argv[i + 1]);
    }
    switch (argv.length > 0 ? argv[0] : "") {
      case "run": run(); break;
      case "member": member(); break;
      default: throw new IllegalArgumentException("GroupRebalance run|member --name value ...");
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

  /** How long the group must be stable before the event; also the "before" window. */
  static final long HOLD_MS = 5000;

  static long now() { return System.nanoTime() / 1_000_000L; }

  static Properties consumerProps(String clientId) {
    Properties p = new Properties();
    p.put("bootstrap.servers", need("bootstrap"));
    p.put("group.id", need("group"));
    p.put("client.id", clientId);
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    p.put("auto.offset.reset", "latest");
    p.put("fetch.max.wait.ms", "100");
    String proto = need("protocol");
    p.put("group.protocol", proto);
    if (proto.equals("classic")) {
      p.put("partition.assignment.strategy", CooperativeStickyAssignor.class.getName());
      p.put("session.timeout.ms", String.valueOf(num("session-ms", 10000)));
      p.put("heartbeat.interval.ms", String.valueOf(num("heartbeat-ms", 1000)));
    }
    return p;
  }

  // ------------------------------------------------------------ members

  static final class Member implements Runnable, ConsumerRebalanceListener {
    final int id;
    final Set<Integer> owned = new HashSet<>();        // guarded by this
    final List<Long> changes = new ArrayList<>();      // times of non-empty assign/revoke/lose, guarded by this
    long[] pollT = new long[4096];                      // guarded by this
    int[] pollN = new int[4096];
    int nPolls;
    volatile boolean stop;
    volatile String error;       // the member's thread ended with this
    volatile String pollError;   // the first exception poll() threw (the member polls on)
    volatile int pollErrors;     // how many times poll() threw
    volatile long lastPollErrorAt = -1;
    volatile long subscribedAt = -1;  // when subscribe() returned
    Thread thread;

    Member(int id) { this.id = id; }

    synchronized Set<Integer> owned() { return new HashSet<>(owned); }

    synchronized void record(long t, int n) {
      if (nPolls == pollT.length) {
        pollT = Arrays.copyOf(pollT, nPolls * 2);
        pollN = Arrays.copyOf(pollN, nPolls * 2);
      }
      pollT[nPolls] = t; pollN[nPolls] = n; nPolls++;
    }

    synchronized void change(Collection<TopicPartition> ps, boolean add) {
      if (ps.isEmpty()) return;
      for (TopicPartition tp : ps) { if (add) owned.add(tp.partition()); else owned.remove(tp.partition()); }
      changes.add(now());
    }

    @Override public void onPartitionsRevoked(Collection<TopicPartition> ps) { change(ps, false); }
    @Override public void onPartitionsAssigned(Collection<TopicPartition> ps) { change(ps, true); }
    @Override public void onPartitionsLost(Collection<TopicPartition> ps) { change(ps, false); }

    @Override public void run() {
      try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps("m-" + id))) {
        c.subscribe(List.of(need("topic")), this);
        subscribedAt = now();
        while (!stop) {
          ConsumerRecords<byte[], byte[]> rs;
          try {
            rs = c.poll(Duration.ofMillis(100));
          } catch (org.apache.kafka.common.KafkaException e) {
            // An error the client hands to the application (e.g. an
            // UNKNOWN_MEMBER_ID answer to OffsetFetch): counted, reported in
            // the JSON, and the member polls on, as an application would.
            if (pollError == null) pollError = e.toString();
            pollErrors++;
            lastPollErrorAt = now();
            Thread.sleep(100);
            continue;
          }
          if (!rs.isEmpty()) record(now(), rs.count());
        }
        c.close(Duration.ofSeconds(5));
      } catch (Throwable t) {
        if (!stop) error = t.toString();
      }
    }

    void start() {
      thread = new Thread(this, "member-" + id);
      thread.setDaemon(true);
      thread.start();
    }
  }

  // ------------------------------------------------------------ run

  static Set<Integer> readVictim(Path f) {
    Set<Integer> s = new HashSet<>();
    try {
      for (String l : Files.readAllLines(f)) if (!l.isBlank()) s.add(Integer.parseInt(l.trim()));
    } catch (Exception e) { /* not yet written */ }
    return s;
  }

  /** Whether every partition is owned exactly once (extra: partitions owned elsewhere). */
  static boolean covered(List<Member> ms, Set<Integer> extra, int parts, boolean everyOwns) {
    int[] cnt = new int[parts];
    for (int p : extra) if (p >= 0 && p < parts) cnt[p]++;
    for (Member m : ms) {
      Set<Integer> o = m.owned();
      if (everyOwns && o.isEmpty()) return false;
      for (int p : o) if (p >= 0 && p < parts) cnt[p]++;
    }
    for (int c : cnt) if (c != 1) return false;
    return true;
  }

  static void run() throws Exception {
    int parts = (int) num("partitions", 0), n = (int) num("members", 0);
    String event = need("event");
    long rate = num("rate", 2000);
    long stableTimeout = num("stable-timeout-s", 180) * 1000, eventTimeout = num("event-timeout-s", 120) * 1000;
    Path victimFile = A.containsKey("victim-file") ? Paths.get(A.get("victim-file")) : null;
    if (event.equals("crash") && (victimFile == null || !A.containsKey("victim-pid")))
      throw new IllegalArgumentException("crash needs --victim-pid and --victim-file");

    Map<String, Object> out = new LinkedHashMap<>();
    out.put("protocol", need("protocol"));
    out.put("event", event);
    out.put("members", n);
    out.put("partitions", parts);
    out.put("rate", rate);

    // The producer: R records/s of 100 bytes, round-robin over the partitions.
    AtomicLong produced = new AtomicLong();
    final boolean[] pstop = {false};
    Thread prod = new Thread(() -> {
      Properties p = new Properties();
      p.put("bootstrap.servers", need("bootstrap"));
      p.put("key.serializer", ByteArraySerializer.class.getName());
      p.put("value.serializer", ByteArraySerializer.class.getName());
      p.put("acks", "1");
      p.put("linger.ms", "5");
      byte[] v = new byte[100];
      try (KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(p)) {
        long t0 = System.nanoTime(), i = 0;
        String topic = need("topic");
        while (!pstop[0]) {
          long due = t0 + i * 1_000_000_000L / rate;
          long wait = due - System.nanoTime();
          if (wait > 0) Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
          pr.send(new ProducerRecord<>(topic, (int) (i % parts), null, v), (md, e) -> { if (e == null) produced.incrementAndGet(); });
          i++;
        }
        pr.close(Duration.ofSeconds(5));
      } catch (Throwable t) { /* reported through the produced count */ }
    }, "producer");
    prod.setDaemon(true);
    prod.start();

    List<Member> ms = new ArrayList<>();
    for (int i = 0; i < n; i++) { Member m = new Member(i); ms.add(m); m.start(); }

    String error = null;
    long t0 = now();
    // Stable: covered for 3 s on end.
    long since = -1, stableAt = -1;
    while (true) {
      long t = now();
      Set<Integer> extra = event.equals("crash") ? readVictim(victimFile) : Set.of();
      boolean ok = covered(ms, extra, parts, true) && (!event.equals("crash") || !extra.isEmpty());
      if (ok) { if (since < 0) since = t; if (t - since >= HOLD_MS) { stableAt = t; break; } } else since = -1;
      if (t - t0 > stableTimeout) { error = "the group was not stable within " + stableTimeout / 1000 + " s"; break; }
      for (Member m : ms) if (m.error != null) { error = "member " + m.id + ": " + m.error; break; }
      if (error != null) break;
      Thread.sleep(10);
    }
    out.put("stable_after_ms", stableAt < 0 ? null : stableAt - t0);

    long eventAt = -1, doneAt = -1;
    Set<Integer> victimShare = Set.of();
    Member joiner = null;
    Map<Integer, Set<Integer>> before = new HashMap<>();
    Map<Integer, Integer> changesBefore = new HashMap<>();
    if (error == null) {
      for (Member m : ms) synchronized (m) { before.put(m.id, new HashSet<>(m.owned)); changesBefore.put(m.id, m.changes.size()); }
      if (event.equals("crash")) {
        victimShare = readVictim(victimFile);
        long pid = Long.parseLong(need("victim-pid"));
        Optional<ProcessHandle> h = ProcessHandle.of(pid);
        eventAt = now();
        if (h.isEmpty() || !h.get().destroyForcibly()) error = "could not kill the victim (pid " + pid + ")";
      } else {
        joiner = new Member(n);
        eventAt = now();
        joiner.start();
      }
      out.put("moved_by_event", victimShare.size());
      int share = parts / (n + 1);
      while (error == null) {
        long t = now();
        boolean ok = joiner == null ? covered(ms, Set.of(), parts, false)
            : covered(concat(ms, joiner), Set.of(), parts, false) && joiner.owned().size() >= share;
        if (ok) { doneAt = t; break; }
        if (t - eventAt > eventTimeout) { error = "partitions not all owned again within " + eventTimeout / 1000 + " s of the event"; break; }
        for (Member m : ms) if (m.error != null) { error = "member " + m.id + ": " + m.error; break; }
        Thread.sleep(5);
      }
      // Keep consuming a moment after the window, so that a gap that ends
      // after it is seen.
      Thread.sleep(1000);
    }
    long endAt = now();
    pstop[0] = true;

    List<Member> all = joiner == null ? ms : concat(ms, joiner);
    if (eventAt >= 0) {
      long hi = doneAt >= 0 ? doneAt : endAt;
      long w = Math.max(1, hi - eventAt);
      out.put("window_ms", doneAt >= 0 ? doneAt - eventAt : null);
      long inW = 0, pre = 0;
      int unmoved = 0, moved = 0;
      long gapIn = 0, gapPre = 0, gapInAll = 0;
      int gapMember = -1;
      List<Long> unmovedGaps = new ArrayList<>();
      for (Member m : all) {
        synchronized (m) {
          for (int i = 0; i < m.nPolls; i++) {
            if (m.pollT[i] > eventAt && m.pollT[i] <= hi) inW += m.pollN[i];
            if (m.pollT[i] > eventAt - HOLD_MS && m.pollT[i] <= eventAt) pre += m.pollN[i];
          }
          if (m == joiner) continue;
          // "did not move": no assignment change at all in the window.
          boolean still = m.changes.size() == changesBefore.get(m.id);
          long g = gap(m, eventAt, hi), gp = gap(m, eventAt - HOLD_MS, eventAt);
          gapInAll = Math.max(gapInAll, g);
          if (still) {
            unmoved++;
            if (g > gapIn) { gapIn = g; gapMember = m.id; }
            unmovedGaps.add(g);
            gapPre = Math.max(gapPre, gp);
          } else moved++;
        }
      }
      out.put("records_in_window", inW);
      out.put("records_per_s", round1(inW * 1000.0 / w));
      out.put("records_per_s_before", round1(pre * 1000.0 / HOLD_MS));
      out.put("unmoved_members", unmoved);
      out.put("moved_members", moved);
      out.put("max_gap_unmoved_ms", unmoved > 0 ? gapIn : null);
      out.put("max_gap_unmoved_before_ms", unmoved > 0 ? gapPre : null);
      out.put("max_gap_all_ms", gapInAll);
      Collections.sort(unmovedGaps);
      out.put("gap_unmoved_p50_ms", unmovedGaps.isEmpty() ? null : unmovedGaps.get(unmovedGaps.size() / 2));
      out.put("unmoved_gap_over_1s", unmovedGaps.stream().filter(g -> g > 1000).count());
      out.put("max_gap_member", gapMember < 0 ? null : "m-" + gapMember + " (" + ms.get(gapMember).owned().size() + " partitions)");
      out.put("joiner_partitions", joiner == null ? null : joiner.owned().size());
      // Where the window went: when the joiner had its consumer built and
      // subscribed, when each member whose assignment changed first saw
      // its change (a revocation, or for a crash a new partition), and the
      // joiner's own changes, all in ms after the event.
      if (joiner != null) {
        out.put("joiner_subscribed_ms", joiner.subscribedAt < 0 ? null : joiner.subscribedAt - eventAt);
        List<Long> jc = new ArrayList<>();
        synchronized (joiner) { for (long t : joiner.changes) jc.add(t - eventAt); }
        out.put("joiner_changes_ms", jc.toString());
      }
      List<Long> firstChange = new ArrayList<>();
      for (Member m : ms) synchronized (m) {
        int k = changesBefore.get(m.id);
        if (m.changes.size() > k) firstChange.add(m.changes.get(k) - eventAt);
      }
      Collections.sort(firstChange);
      out.put("moved_first_change_ms", firstChange.toString());
    }
    int pe = 0, pem = 0;
    String firstPe = null;
    for (Member m : all) {
      if (m.pollErrors > 0) { pe += m.pollErrors; pem++; if (firstPe == null) firstPe = "member " + m.id + ": " + m.pollError; }
    }
    out.put("poll_errors", pe);
    out.put("poll_error_members", pem);
    out.put("poll_error_first", firstPe);
    out.put("produced", produced.get());
    out.put("error", error);
    System.out.println(json(out));
    System.out.flush();

    for (Member m : all) m.stop = true;
    long deadline = now() + 20000;
    for (Member m : all) m.thread.join(Math.max(1, deadline - now()));
    Runtime.getRuntime().halt(0);
  }

  /** The longest time without records in [lo, hi] for member m. */
  static long gap(Member m, long lo, long hi) {
    long last = lo, g = 0;
    for (int i = 0; i < m.nPolls; i++) {
      long t = m.pollT[i];
      if (t <= lo) continue;
      if (t > hi) break;
      g = Math.max(g, t - last);
      last = t;
    }
    return Math.max(g, hi - last);
  }

  static List<Member> concat(List<Member> ms, Member m) {
    List<Member> l = new ArrayList<>(ms);
    l.add(m);
    return l;
  }

  static double round1(double x) { return Math.round(x * 10) / 10.0; }

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

  // ------------------------------------------------------------ member (the crash victim)

  static void member() throws Exception {
    Path f = Paths.get(need("file"));
    Path tmp = Paths.get(need("file") + ".tmp");
    Set<Integer> owned = new TreeSet<>();
    ConsumerRebalanceListener l = new ConsumerRebalanceListener() {
      void write() {
        StringBuilder b = new StringBuilder();
        for (int p : owned) b.append(p).append('\n');
        try {
          Files.write(tmp, b.toString().getBytes(StandardCharsets.UTF_8));
          Files.move(tmp, f, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (Exception e) { throw new RuntimeException(e); }
      }
      @Override public void onPartitionsRevoked(Collection<TopicPartition> ps) { for (TopicPartition tp : ps) owned.remove(tp.partition()); write(); }
      @Override public void onPartitionsAssigned(Collection<TopicPartition> ps) { for (TopicPartition tp : ps) owned.add(tp.partition()); write(); }
      @Override public void onPartitionsLost(Collection<TopicPartition> ps) { for (TopicPartition tp : ps) owned.remove(tp.partition()); write(); }
    };
    long limit = now() + num("seconds", 600) * 1000;
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps("victim"))) {
      c.subscribe(List.of(need("topic")), l);
      while (now() < limit) c.poll(Duration.ofMillis(100));
    }
  }
}
