// The Java driver (org.apache.kafka:kafka-clients 4.4.0) of the client
// matrix; ops and output as tests/clients/README.md describes. Compiled by
// tools/clients/fetch.sh against the jars tools/kafka/fetch.sh cached.
import java.io.PrintWriter;
import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class MatrixDriver {
  static final String VERSION = "4.4.0";
  static Map<String, String> opt = new HashMap<>();
  static String op;
  static long deadline;
  static final Map<String, Object> result = new LinkedHashMap<>();

  static String o(String k, String d) { return opt.getOrDefault(k, d); }
  static int n(String k, int d) { return Integer.parseInt(o(k, String.valueOf(d))); }
  static String topic() { return o("topic", ""); }
  static String group() { return o("group", "g-" + topic()); }
  static boolean timeLeft() { return System.currentTimeMillis() < deadline; }

  static byte[] value(String prefix, int i, int size) {
    StringBuilder b = new StringBuilder(prefix).append(i);
    while (b.length() < size) b.append('x');
    return b.toString().getBytes();
  }

  static int index(String prefix, byte[] v) {
    String s = new String(v);
    if (!s.startsWith(prefix)) return -1;
    s = s.substring(prefix.length());
    int e = s.indexOf('x');
    try { return Integer.parseInt(e < 0 ? s : s.substring(0, e)); } catch (NumberFormatException x) { return -1; }
  }

  static class Unsupported extends Exception { Unsupported(String m) { super(m); } }

  // --out lines, written as the events happen (the harness waits for the
  // first one before it moves leaders), and the longest gap between events.
  static class Timeline {
    final long start = System.nanoTime();
    long last = 0, gap = 0;
    int count = 0;
    final PrintWriter out;
    Timeline() throws Exception {
      String path = opt.get("out");
      out = path == null ? null : new PrintWriter(Files.newBufferedWriter(Paths.get(path)), true);
    }
    synchronized void add(int p, long off, int idx) {
      long now = System.nanoTime();
      if (last != 0 && now - last > gap) gap = now - last;
      last = now;
      count++;
      if (out != null) out.println(p + " " + off + " " + idx + " " + String.format("%.1f", (now - start) / 1e6));
    }
    synchronized int count() { return count; }
    synchronized double gapMs() { return gap / 1e6; }
    synchronized void write() throws Exception {
      if (out != null) {
        out.close();
        if (out.checkError()) throw new Exception("writing --out failed");
      }
    }
  }

  static Properties base() {
    Properties p = new Properties();
    p.put("bootstrap.servers", o("bootstrap", "127.0.0.1:9092"));
    p.put("client.id", "eg-matrix-java");
    p.put("metadata.max.age.ms", "10000");
    return p;
  }

  static KafkaProducer<byte[], byte[]> producer(boolean idempotent, Map<String, String> extra) {
    Properties p = base();
    p.put("acks", idempotent ? "all" : o("acks", "all"));
    p.put("enable.idempotence", String.valueOf(idempotent));
    p.put("compression.type", o("compression", "none"));
    p.put("linger.ms", "5");
    p.put("max.request.size", String.valueOf(4 << 20));
    p.put("delivery.timeout.ms", "30000");
    p.put("request.timeout.ms", "10000");
    p.putAll(extra);
    return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
  }

  static KafkaConsumer<byte[], byte[]> consumer(Map<String, String> extra) {
    Properties p = base();
    p.put("auto.offset.reset", "earliest");
    p.put("enable.auto.commit", "false");
    p.putAll(extra);
    return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  static List<TopicPartition> partitions(KafkaConsumer<?, ?> c) {
    List<TopicPartition> tps = new ArrayList<>();
    for (PartitionInfo pi : c.partitionsFor(topic(), Duration.ofSeconds(10))) tps.add(new TopicPartition(topic(), pi.partition()));
    return tps;
  }

  static int produce(boolean idempotent, String prefix, Timeline tl, boolean byPartition) throws Exception {
    int records = n("records", 100), size = n("record-size", 100), rate = n("rate", 0);
    AtomicInteger acked = new AtomicInteger();
    AtomicReference<Exception> err = new AtomicReference<>();
    long t0 = System.nanoTime();
    try (KafkaProducer<byte[], byte[]> p = producer(idempotent, Map.of())) {
      for (int i = 0; i < records; i++) {
        if (rate > 0) {
          long due = t0 + (long) i * 1_000_000_000L / rate;
          long wait = due - System.nanoTime();
          if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
        final int idx = i;
        ProducerRecord<byte[], byte[]> r = byPartition
            ? new ProducerRecord<>(topic(), i, ("k" + i).getBytes(), value(prefix, i, size))
            : new ProducerRecord<>(topic(), ("k" + i).getBytes(), value(prefix, i, size));
        p.send(r, (md, e) -> {
          if (e != null) { err.compareAndSet(null, e); return; }
          acked.incrementAndGet();
          if (tl != null) tl.add(md.partition(), md.offset(), idx);
        });
      }
      p.flush();
    }
    result.put("records", acked.get());
    if (err.get() != null) throw err.get();
    return acked.get();
  }

  // Reads from the start of every partition (assign) until `done` says so.
  interface Seen { boolean see(ConsumerRecord<byte[], byte[]> r) throws Exception; }

  static void readAssigned(Map<String, String> extra, Seen seen, long lingerMs) throws Exception {
    try (KafkaConsumer<byte[], byte[]> c = consumer(extra)) {
      List<TopicPartition> tps = partitions(c);
      c.assign(tps);
      c.seekToBeginning(tps);
      long until = Long.MAX_VALUE;
      boolean done = false;
      while (timeLeft() && System.currentTimeMillis() < until) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          if (seen.see(r) && !done) {
            done = true;
            until = System.currentTimeMillis() + lingerMs;
          }
        }
        if (done && lingerMs == 0) return;
      }
      if (!done) throw new Exception("read timed out");
    }
  }

  static void consumeAssign() throws Exception {
    int want = n("records", 100), size = n("record-size", 100);
    AtomicInteger got = new AtomicInteger();
    Map<Integer, Long> last = new HashMap<>();
    List<String> bad = new ArrayList<>();
    try {
      readAssigned(Map.of("max.partition.fetch.bytes", String.valueOf(4 << 20)), r -> {
        Long prev = last.put(r.partition(), r.offset());
        if (prev != null && r.offset() <= prev) bad.add("partition " + r.partition() + " offset " + r.offset() + " after " + prev);
        int i = index("", r.value());
        if (op.equals("large-record") && !Arrays.equals(r.value(), value("", i, size))) bad.add("value of " + r.value().length + " bytes differs");
        if (op.equals("many-partitions") && i != r.partition()) bad.add("partition " + r.partition() + " holds record " + i);
        return got.incrementAndGet() >= want;
      }, 0);
    } finally {
      result.put("records", got.get());
    }
    if (!bad.isEmpty()) throw new Exception(bad.get(0));
  }

  static void consumeGroup(Timeline tl) throws Exception {
    int want = n("records", 100);
    String protocol = o("group-protocol", "classic");
    Map<String, String> extra = new HashMap<>(Map.of("group.id", group(), "group.protocol", protocol));
    if (protocol.equals("classic")) extra.put("session.timeout.ms", "10000");
    int got = 0;
    Map<Integer, Long> last = new HashMap<>();
    String bad = null;
    try (KafkaConsumer<byte[], byte[]> c = consumer(extra)) {
      c.subscribe(List.of(topic()));
      while (got < want && timeLeft()) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          got++;
          Long prev = last.put(r.partition(), r.offset());
          if (prev != null && r.offset() <= prev && bad == null) bad = "partition " + r.partition() + " offset " + r.offset() + " after " + prev;
          if (tl != null) tl.add(r.partition(), r.offset(), index("", r.value()));
        }
      }
      result.put("records", got);
      if (got < want) throw new Exception("read " + got + " of " + want + " records");
      c.commitSync(Duration.ofSeconds(10));
    }
    if (bad != null) throw new Exception(bad);
  }

  static void transactions() throws Exception {
    int records = n("records", 100), size = n("record-size", 100);
    String tid = o("transactional-id", "tx-" + topic());
    try (KafkaProducer<byte[], byte[]> p = producer(true, Map.of("transactional.id", tid))) {
      p.initTransactions();
      for (String prefix : new String[] {"c", "a"}) {
        p.beginTransaction();
        for (int i = 0; i < records; i++) p.send(new ProducerRecord<>(topic(), ("k" + i).getBytes(), value(prefix, i, size)));
        p.flush();
        if (prefix.equals("c")) p.commitTransaction(); else p.abortTransaction();
      }
    }
    int[] seen = new int[2];
    readAssigned(Map.of("isolation.level", "read_committed"), r -> {
      if (index("c", r.value()) >= 0) seen[0]++; else seen[1]++;
      return seen[0] >= records;
    }, 1000);
    result.put("records", seen[0]);
    if (seen[0] != records || seen[1] != 0) throw new Exception("read_committed saw " + seen[0] + " committed (want " + records + ") and " + seen[1] + " aborted");
  }

  static Admin admin() { return Admin.create(base()); }

  static void offsets() throws Exception {
    TopicPartition tp = new TopicPartition(topic(), 0);
    try (Admin a = admin()) {
      a.alterConsumerGroupOffsets(group(), Map.of(tp, new OffsetAndMetadata(5))).all().get(20, TimeUnit.SECONDS);
      OffsetAndMetadata got = a.listConsumerGroupOffsets(group()).partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS).get(tp);
      if (got == null || got.offset() != 5) throw new Exception("fetched " + got + ", want offset 5");
    }
    result.put("records", 1);
  }

  static List<List<Object>> nodes(Collection<Node> ns) {
    List<List<Object>> out = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (Node nd : ns) if (nd != null && seen.add(nd.host() + ":" + nd.port())) out.add(List.of(nd.host(), nd.port()));
    return out;
  }

  static void metadata() throws Exception {
    try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of())) {
      List<PartitionInfo> ps = c.partitionsFor(topic(), Duration.ofSeconds(20));
      List<Node> ns = new ArrayList<>();
      for (PartitionInfo pi : ps) { ns.add(pi.leader()); ns.addAll(Arrays.asList(pi.replicas())); }
      result.put("brokers", nodes(ns));
      result.put("partitions", ps.size());
    }
  }

  static void adminOps() throws Exception {
    String name = topic() + "-adm";
    List<String> steps = new ArrayList<>();
    try (Admin a = admin()) {
      a.createTopics(List.of(new NewTopic(name, 3, (short) 3))).all().get(20, TimeUnit.SECONDS);
      steps.add("create");
      for (int tries = 0; ; tries++) {
        try {
          TopicDescription d = a.describeTopics(List.of(name)).allTopicNames().get(10, TimeUnit.SECONDS).get(name);
          if (d.partitions().size() == 3) break;
        } catch (ExecutionException e) {
          if (tries > 50) throw e;
        }
        Thread.sleep(100);
      }
      steps.add("describe-topic");
      DescribeClusterResult dc = a.describeCluster();
      result.put("brokers", nodes(dc.nodes().get(20, TimeUnit.SECONDS)));
      steps.add("describe-cluster");
      // Any broker may answer; one that has not applied the create yet lists without the topic.
      for (int tries = 0; !a.listTopics().names().get(20, TimeUnit.SECONDS).contains(name); tries++) {
        if (tries > 100) throw new Exception("list topics: no " + name);
        Thread.sleep(100);
      }
      steps.add("list-topics");
      a.deleteTopics(List.of(name)).all().get(20, TimeUnit.SECONDS);
      steps.add("delete");
    }
    Collections.sort(steps);
    result.put("records", steps.size());
    result.put("extra", Map.of("steps", steps));
  }

  static void share() throws Exception {
    int want = n("records", 100);
    try (Admin a = admin()) {
      ConfigResource g = new ConfigResource(ConfigResource.Type.GROUP, group());
      a.incrementalAlterConfigs(Map.of(g, List.of(new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
          .all().get(20, TimeUnit.SECONDS);
    }
    Properties p = base();
    p.put("group.id", group());
    Set<Integer> seen = new HashSet<>();
    try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      c.subscribe(List.of(topic()));
      while (seen.size() < want && timeLeft()) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) seen.add(index("", r.value()));
        c.commitSync(Duration.ofSeconds(5));
      }
    }
    result.put("records", seen.size());
    if (seen.size() < want) throw new Exception("share consumer read " + seen.size() + " of " + want);
  }

  static void run() throws Exception {
    switch (op) {
      case "metadata": metadata(); return;
      case "produce": produce(false, "", null, false); return;
      case "produce-idempotent": produce(true, "", null, false); return;
      case "transactions": transactions(); return;
      case "consume-assign": consumeAssign(); return;
      case "consume-group": consumeGroup(null); return;
      case "offsets": offsets(); return;
      case "large-record":
        opt.put("records", "1");
        produce(true, "", null, false);
        consumeAssign();
        return;
      case "many-partitions":
        opt.put("records", o("partitions", "200"));
        produce(true, "", null, true);
        consumeAssign();
        return;
      case "admin": adminOps(); return;
      case "share-consume": share(); return;
      case "produce-move":
      case "consume-move": {
        Timeline tl = new Timeline();
        try {
          if (op.equals("produce-move")) produce(true, "", tl, false); else consumeGroup(tl);
        } finally {
          result.put("max_gap_ms", tl.gapMs());
          tl.write();
        }
        return;
      }
      default: throw new Unsupported("unknown op " + op);
    }
  }

  static String json(Object v) {
    if (v == null) return "null";
    if (v instanceof Number || v instanceof Boolean) return v.toString();
    if (v instanceof Map) {
      StringJoiner j = new StringJoiner(",", "{", "}");
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) j.add(json(e.getKey().toString()) + ":" + json(e.getValue()));
      return j.toString();
    }
    if (v instanceof Collection) {
      StringJoiner j = new StringJoiner(",", "[", "]");
      for (Object x : (Collection<?>) v) j.add(json(x));
      return j.toString();
    }
    StringBuilder b = new StringBuilder("\"");
    for (char ch : v.toString().toCharArray()) {
      if (ch == '"' || ch == '\\') b.append('\\').append(ch);
      else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
      else b.append(ch);
    }
    return b.append('"').toString();
  }

  public static void main(String[] args) {
    op = args.length > 0 ? args[0] : "";
    for (int i = 1; i + 1 < args.length; i += 2) opt.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    long started = System.nanoTime();
    deadline = System.currentTimeMillis() + n("timeout-ms", 30000) * 9L / 10;
    result.put("client", "java");
    result.put("version", VERSION);
    result.put("op", op);
    result.put("status", "ok");
    result.put("records", 0);
    // Bound the whole run: a client call that hangs past --timeout-ms ends the process with a result.
    Thread watchdog = new Thread(() -> {
      try { Thread.sleep(n("timeout-ms", 30000)); } catch (InterruptedException e) { return; }
      result.put("status", "failed");
      result.put("error", "timed out after " + n("timeout-ms", 30000) + " ms");
      finish(started);
    });
    watchdog.setDaemon(true);
    watchdog.start();
    try {
      run();
    } catch (Unsupported u) {
      result.put("status", "unsupported");
      result.put("error", u.getMessage());
    } catch (Throwable t) {
      Throwable c = (t instanceof ExecutionException && t.getCause() != null) ? t.getCause() : t;
      result.put("status", "failed");
      result.put("error", c.getClass().getSimpleName() + ": " + c.getMessage());
    }
    finish(started);
  }

  static synchronized void finish(long started) {
    result.put("elapsed_ms", (System.nanoTime() - started) / 1e6);
    System.out.println(json(result));
    System.out.flush();
    Runtime.getRuntime().halt("failed".equals(result.get("status")) ? 1 : 0);
  }
}
