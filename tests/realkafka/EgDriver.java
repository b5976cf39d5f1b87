// EgDriver: the Java client (kafka-clients, the brokers' version) as a test
// peer. Each subcommand runs one client story against --bootstrap (the real
// cluster directly, or epochgate in front of it) and prints one JSON line of
// what the application saw; the Python tests compare the direct run with the
// run through epochgate and decide. Logs go to stderr (and, with the log4j
// config the tests pass, NetworkClient's connection lines to a file).
//
//   produce-consume --bootstrap B --topic T --count N --group G --protocol classic|consumer
//                   [--props F]  (client properties for every client: security.protocol, sasl.*, ssl.*)
//                   [--mover D]  (moves partition 0's leader through D, the cluster's own
//                                 PLAINTEXT listener, after half the records were sent)
//   stories         --bootstrap B --count N --stories F1@T1@G1,F2@T2@G2,... [--mover D]
//                   produce-consume for each (props file, topic, group) at once,
//                   one thread each, in one JVM: {"stories":[...]}
//   txn             --bootstrap B --topic T --txn-id X
//   admin           --bootstrap B --topic T --group G
//   share           --bootstrap B --topic T --group G --count N --release K
//                   [--mover D --move-to BROKER]   (moves the share partition's
//                   leader through D, the cluster itself, halfway through)
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class EgDriver {
  static final long DEADLINE_MS = 90_000;
  static Map<String, String> opt = new HashMap<>();

  public static void main(String[] args) throws Exception {
    for (int i = 1; i + 1 < args.length; i += 2) opt.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    String out;
    switch (args[0]) {
      case "produce-consume": out = produceConsume(opt); break;
      case "stories": out = stories(); break;
      case "txn": out = txn(); break;
      case "admin": out = admin(); break;
      case "share": out = share(); break;
      default: throw new IllegalArgumentException(args[0]);
    }
    System.out.println(out);
    System.out.flush();
    System.exit(0);  // client threads must not hold the JVM
  }

  static Properties base() {
    Properties p = new Properties();
    p.put("bootstrap.servers", opt.get("bootstrap"));
    p.put("request.timeout.ms", "15000");
    return p;
  }

  // Client properties from a file (security settings), or none.
  static Properties fileProps(String path) throws Exception {
    Properties p = new Properties();
    if (path != null) try (java.io.FileReader r = new java.io.FileReader(path)) { p.load(r); }
    return p;
  }

  // -- several produce-consume stories at once, one thread each
  static String stories() throws Exception {
    List<Thread> threads = new ArrayList<>();
    String[] specs = opt.get("stories").split(",");
    String[] results = new String[specs.length];
    for (int i = 0; i < specs.length; i++) {
      String[] f = specs[i].split("@");
      Map<String, String> o = new HashMap<>(opt);
      o.put("props", f[0]);
      o.put("topic", f[1]);
      o.put("group", f[2]);
      final int k = i;
      Thread t = new Thread(() -> {
        try {
          results[k] = produceConsume(o);
        } catch (Exception e) {
          results[k] = "{\"topic\":" + KafkaQuote.q(f[1]) + ",\"props\":" + KafkaQuote.q(f[0]) +
                       ",\"exception\":" + KafkaQuote.q(String.valueOf(e)) + "}";
        }
      });
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) t.join();
    return "{\"stories\":[" + String.join(",", results) + "]}";
  }

  static KafkaProducer<String, String> producer(Properties extra) {
    Properties p = base();
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("acks", "all");
    p.put("enable.idempotence", "true");
    p.put("linger.ms", "5");
    p.put("delivery.timeout.ms", "60000");
    p.putAll(extra);
    return new KafkaProducer<>(p);
  }

  static Properties consumerProps(String group, String protocol) {
    Properties p = base();
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    p.put("auto.offset.reset", "earliest");
    p.put("enable.auto.commit", "false");
    if (group != null) p.put("group.id", group);
    if (protocol != null) p.put("group.protocol", protocol);
    return p;
  }

  // -- idempotent producer (acks=all) + a consumer group
  static String produceConsume(Map<String, String> o) throws Exception {
    String topic = o.get("topic");
    int n = Integer.parseInt(o.get("count"));
    Properties sec = fileProps(o.get("props"));
    long t0 = System.currentTimeMillis();
    Map<String, Long> acked = new HashMap<>();  // value -> partition<<40 | offset
    List<Exception> errors = Collections.synchronizedList(new ArrayList<>());
    String moveResult = "none";
    try (KafkaProducer<String, String> pr = producer(sec)) {
      for (int i = 0; i < n; i++) {
        String v = "v" + i;
        if (o.containsKey("mover") && i == n / 2) {
          pr.flush();  // the first half acknowledged by the old leader
          int leader = leaderOf(o.get("mover"), new TopicPartition(topic, 0));
          moveResult = move(o.get("mover"), new TopicPartition(topic, 0), 1 + leader % 3);
        }
        pr.send(new ProducerRecord<>(topic, "k" + (i % 17), v), (md, e) -> {
          if (e != null) errors.add(e);
          else synchronized (acked) { acked.put(v, ((long) md.partition() << 40) | md.offset()); }
        });
      }
      pr.flush();
    }
    long produceMs = System.currentTimeMillis() - t0;
    Map<String, Long> seen = new HashMap<>();
    int dups = 0, disorder = 0;
    Map<Integer, Long> lastOffset = new HashMap<>();
    long t1 = System.currentTimeMillis();
    Set<String> assignedOnce = new HashSet<>();
    Properties cp = consumerProps(o.get("group"), o.get("protocol"));
    cp.putAll(sec);
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
      c.subscribe(List.of(topic));
      while (seen.size() < acked.size() && System.currentTimeMillis() - t1 < DEADLINE_MS) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
          if (seen.put(r.value(), ((long) r.partition() << 40) | r.offset()) != null) dups++;
          Long last = lastOffset.put(r.partition(), r.offset());
          if (last != null && r.offset() <= last) disorder++;
        }
        for (TopicPartition tp : c.assignment()) assignedOnce.add(tp.toString());
      }
      c.commitSync(Duration.ofSeconds(30));
    }
    int missing = 0, moved = 0;
    for (Map.Entry<String, Long> e : acked.entrySet()) {
      Long s = seen.get(e.getKey());
      if (s == null) missing++;
      else if (!s.equals(e.getValue())) moved++;
    }
    return String.format("{\"topic\":%s,\"acked\":%d,\"errors\":%d,\"consumed\":%d,\"duplicates\":%d,\"missing\":%d," +
        "\"offset_mismatch\":%d,\"out_of_order\":%d,\"partitions_assigned\":%d,\"produce_ms\":%d,\"consume_ms\":%d," +
        "\"move\":%s,\"first_error\":%s}",
        KafkaQuote.q(topic), acked.size(), errors.size(), seen.size(), dups, missing, moved, disorder, assignedOnce.size(),
        produceMs, System.currentTimeMillis() - t1, KafkaQuote.q(moveResult),
        KafkaQuote.q(errors.isEmpty() ? "" : String.valueOf(errors.get(0))));
  }

  // -- transactions: commit, abort, commit; read_committed sees only commits
  static String txn() throws Exception {
    String topic = opt.get("topic");
    Properties tp = new Properties();
    tp.put("transactional.id", opt.get("txn-id"));
    int committed = 0, aborted = 0;
    try (KafkaProducer<String, String> pr = producer(tp)) {
      pr.initTransactions();
      int[][] plan = {{100, 1}, {50, 0}, {100, 1}};
      int seq = 0;
      for (int[] step : plan) {
        pr.beginTransaction();
        for (int i = 0; i < step[0]; i++)
          pr.send(new ProducerRecord<>(topic, (step[1] == 1 ? "c" : "a") + (seq++)));
        pr.flush();
        if (step[1] == 1) { pr.commitTransaction(); committed += step[0]; }
        else { pr.abortTransaction(); aborted += step[0]; }
      }
    }
    int[] rc = readAll(topic, "read_committed");
    int[] ru = readAll(topic, "read_uncommitted");
    return String.format("{\"committed\":%d,\"aborted\":%d,\"rc_commit_values\":%d,\"rc_abort_values\":%d," +
        "\"ru_commit_values\":%d,\"ru_abort_values\":%d}", committed, aborted, rc[0], rc[1], ru[0], ru[1]);
  }

  // Reads every partition from the start to its end offset (assign, no group).
  static int[] readAll(String topic, String isolation) {
    Properties p = consumerProps(null, null);
    p.put("isolation.level", isolation);
    int c = 0, a = 0;
    try (KafkaConsumer<String, String> cons = new KafkaConsumer<>(p)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (PartitionInfo pi : cons.partitionsFor(topic)) tps.add(new TopicPartition(topic, pi.partition()));
      cons.assign(tps);
      cons.seekToBeginning(tps);
      Map<TopicPartition, Long> end = cons.endOffsets(tps);
      long t0 = System.currentTimeMillis();
      while (System.currentTimeMillis() - t0 < DEADLINE_MS) {
        for (ConsumerRecord<String, String> r : cons.poll(Duration.ofMillis(200))) {
          if (r.value().startsWith("c")) c++; else a++;
        }
        boolean done = true;
        for (TopicPartition t : tps) if (cons.position(t) < end.get(t)) done = false;
        if (done) break;
      }
    }
    return new int[] {c, a};
  }

  // -- Admin: what an operator's tool does through the proxy
  static String admin() throws Exception {
    String topic = opt.get("topic");
    String group = opt.get("group");
    StringBuilder o = new StringBuilder("{");
    try (Admin ad = Admin.create(base())) {
      DescribeClusterResult dc = ad.describeCluster();
      List<Integer> ports = new ArrayList<>();
      List<Integer> ids = new ArrayList<>();
      for (Node nd : dc.nodes().get()) { ports.add(nd.port()); ids.add(nd.id()); }
      Collections.sort(ids);
      o.append("\"node_ids\":").append(ids).append(",\"node_ports\":").append(ports);
      o.append(",\"controller_port\":").append(dc.controller().get().port());
      ad.createTopics(List.of(new NewTopic(topic, 3, (short) 3).configs(Map.of("min.insync.replicas", "2")))).all().get();
      o.append(",\"listed\":").append(waitListed(ad, topic));
      TopicDescription td = waitDescribed(ad, topic);
      List<Integer> leaderPorts = new ArrayList<>();
      for (TopicPartitionInfo p : td.partitions()) leaderPorts.add(p.leader().port());
      o.append(",\"partitions\":").append(td.partitions().size())
       .append(",\"replicas_per_partition\":").append(td.partitions().get(0).replicas().size())
       .append(",\"leader_ports\":").append(leaderPorts)
       .append(",\"has_topic_id\":").append(!td.topicId().equals(Uuid.ZERO_UUID));
      ConfigResource cr = new ConfigResource(ConfigResource.Type.TOPIC, topic);
      ad.incrementalAlterConfigs(Map.of(cr, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"),
          AlterConfigOp.OpType.SET)))).all().get();
      Config cfg = waitConfig(ad, cr, "retention.ms", "3600000");
      o.append(",\"retention_ms\":\"").append(cfg.get("retention.ms").value())
       .append("\",\"min_isr\":\"").append(cfg.get("min.insync.replicas").value()).append("\"");
      // A group with committed offsets, then its description and offsets.
      try (KafkaProducer<String, String> pr = producer(new Properties())) {
        for (int i = 0; i < 30; i++) pr.send(new ProducerRecord<>(topic, i % 3, null, "a" + i));
        pr.flush();
      }
      int consumed = 0;
      try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(group, "classic"))) {
        c.subscribe(List.of(topic));
        long t0 = System.currentTimeMillis();
        while (consumed < 30 && System.currentTimeMillis() - t0 < DEADLINE_MS) consumed += c.poll(Duration.ofMillis(200)).count();
        c.commitSync();
      }
      Map<TopicPartition, OffsetAndMetadata> offs = ad.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
      long sum = 0;
      for (OffsetAndMetadata m : offs.values()) sum += m.offset();
      o.append(",\"consumed\":").append(consumed).append(",\"committed_sum\":").append(sum);
      ConsumerGroupDescription gd = ad.describeConsumerGroups(List.of(group)).all().get().get(group);
      o.append(",\"group_state\":\"").append(gd.groupState()).append("\"");
      o.append(",\"group_coordinator_port\":").append(gd.coordinator().port());
      boolean listed = false;
      for (GroupListing g : ad.listGroups().all().get()) listed |= g.groupId().equals(group);
      o.append(",\"group_listed\":").append(listed);
      TopicPartition tp0 = new TopicPartition(topic, 0);
      ad.alterConsumerGroupOffsets(group, Map.of(tp0, new OffsetAndMetadata(1))).all().get();
      long after = ad.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().get(tp0).offset();
      o.append(",\"altered_offset\":").append(after);
      // The preferred leader already leads: the answer names that, per partition.
      Optional<Throwable> el = ad.electLeaders(ElectionType.PREFERRED, Set.of(tp0)).partitions().get().get(tp0);
      o.append(",\"elect\":\"").append(el.map(e -> e.getClass().getSimpleName()).orElse("elected")).append("\"");
      ListOffsetsResult lo = ad.listOffsets(Map.of(tp0, OffsetSpec.latest()));
      o.append(",\"latest_offset_p0\":").append(lo.partitionResult(tp0).get().offset());
      ad.deleteConsumerGroups(List.of(group)).all().get();
      ad.deleteTopics(List.of(topic)).all().get();
      o.append(",\"deleted\":true");
    }
    return o.append("}").toString();
  }

  // A created topic reaches each broker's metadata cache a little after
  // createTopics completes (KRaft propagates it asynchronously), and
  // listTopics asks whichever broker is least loaded: poll, as an Admin
  // user must, until it is listed or the deadline passes.
  static boolean waitListed(Admin ad, String topic) throws Exception {
    long t0 = System.currentTimeMillis();
    while (!ad.listTopics().names().get().contains(topic)) {
      if (System.currentTimeMillis() - t0 > DEADLINE_MS) return false;
      Thread.sleep(50);
    }
    return true;
  }

  static TopicDescription waitDescribed(Admin ad, String topic) throws Exception {
    long t0 = System.currentTimeMillis();
    while (true) {
      try {
        TopicDescription td = ad.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        if (td.partitions().stream().allMatch(p -> p.leader() != null)) return td;
      } catch (ExecutionException e) {
        if (System.currentTimeMillis() - t0 > DEADLINE_MS) throw e;
      }
      Thread.sleep(50);
    }
  }

  /** The resource's configuration once `key` reads `value`, or as it is at
   *  DEADLINE_MS. An altered config reaches the controller first; the broker
   *  that answers DescribeConfigs applies it from the metadata log a moment
   *  later, so a describe right after the alter can still read the old value. */
  static Config waitConfig(Admin ad, ConfigResource cr, String key, String value) throws Exception {
    long t0 = System.currentTimeMillis();
    while (true) {
      Config cfg = ad.describeConfigs(List.of(cr)).all().get().get(cr);
      ConfigEntry e = cfg.get(key);
      if ((e != null && value.equals(e.value())) || System.currentTimeMillis() - t0 > DEADLINE_MS) return cfg;
      Thread.sleep(50);
    }
  }

  // -- share group (KIP-932): accept, release (redelivered), move the leader
  static String share() throws Exception {
    String topic = opt.get("topic");
    String group = opt.get("group");
    int n = Integer.parseInt(opt.get("count"));
    int release = Integer.parseInt(opt.get("release"));
    try (Admin ad = Admin.create(base())) {
      ConfigResource gr = new ConfigResource(ConfigResource.Type.GROUP, group);
      ad.incrementalAlterConfigs(Map.of(gr, List.of(new AlterConfigOp(
          new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all().get();
    }
    try (KafkaProducer<String, String> pr = producer(new Properties())) {
      for (int i = 0; i < n; i++) pr.send(new ProducerRecord<>(topic, 0, null, "s" + i));
      pr.flush();
    }
    Properties p = consumerProps(group, null);
    p.remove("auto.offset.reset");
    p.remove("enable.auto.commit");
    p.put("share.acknowledgement.mode", "explicit");
    Set<String> accepted = new HashSet<>();
    Set<String> released = new HashSet<>();
    int redelivered = 0, dupAccepted = 0, errors = 0;
    String firstError = "";  // the first failed acknowledgement commit: class and message
    String moveResult = "none";
    long t0 = System.currentTimeMillis();
    try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
      c.subscribe(List.of(topic));
      while (accepted.size() < n && System.currentTimeMillis() - t0 < DEADLINE_MS) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
          int idx = Integer.parseInt(r.value().substring(1));
          short dc = r.deliveryCount().orElse((short) 1);
          if (dc > 1 && released.contains(r.value())) redelivered++;
          if (idx < release && dc == 1) {
            c.acknowledge(r, AcknowledgeType.RELEASE);
            released.add(r.value());
          } else {
            if (!accepted.add(r.value())) dupAccepted++;
            c.acknowledge(r, AcknowledgeType.ACCEPT);
          }
        }
        for (Optional<KafkaException> e : c.commitSync(Duration.ofSeconds(30)).values()) {
          if (e.isEmpty()) continue;
          if (errors++ == 0) firstError = e.get().getClass().getSimpleName() + ": " + e.get().getMessage();
        }
        if (opt.containsKey("mover") && moveResult.equals("none") && accepted.size() >= n / 2) {
          moveResult = move(opt.get("mover"), new TopicPartition(topic, 0), Integer.parseInt(opt.get("move-to")));
        }
      }
    }
    return String.format("{\"produced\":%d,\"accepted\":%d,\"released\":%d,\"redelivered\":%d," +
        "\"accepted_twice\":%d,\"commit_errors\":%d,\"first_commit_error\":\"%s\",\"move\":\"%s\",\"ms\":%d}",
        n, accepted.size(), released.size(), redelivered, dupAccepted, errors,
        firstError.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " "), moveResult, System.currentTimeMillis() - t0);
  }

  // The current leader of `tp` as the cluster (`bootstrap`) describes it.
  static int leaderOf(String bootstrap, TopicPartition tp) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("client.id", "eg-mover");
    try (Admin ad = Admin.create(p)) {
      return ad.describeTopics(List.of(tp.topic())).allTopicNames().get().get(tp.topic())
          .partitions().get(tp.partition()).leader().id();
    }
  }

  // Reorder replicas with `target` first, then a PREFERRED election.
  static String move(String bootstrap, TopicPartition tp, int target) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    // The tests leave this client's connections out: it talks to the cluster
    // itself on purpose, as an operator's tool would.
    p.put("client.id", "eg-mover");
    try (Admin ad = Admin.create(p)) {
      TopicPartitionInfo info = ad.describeTopics(List.of(tp.topic())).allTopicNames().get().get(tp.topic())
          .partitions().get(tp.partition());
      List<Integer> order = new ArrayList<>(List.of(target));
      for (Node nd : info.replicas()) if (nd.id() != target) order.add(nd.id());
      ad.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(order)))).all().get();
      long t0 = System.currentTimeMillis();
      while (!ad.listPartitionReassignments(Set.of(tp)).reassignments().get().isEmpty()
             && System.currentTimeMillis() - t0 < 30000) Thread.sleep(20);
      try {
        Optional<Throwable> e = ad.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get().get(tp);
        return e.map(x -> x.getClass().getSimpleName()).orElse("moved:" + info.leader().id() + "->" + target);
      } catch (ExecutionException e) {
        return e.getCause().getClass().getSimpleName();
      }
    }
  }
}

// JSON string quoting for the one-line results.
class KafkaQuote {
  static String q(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }
}
