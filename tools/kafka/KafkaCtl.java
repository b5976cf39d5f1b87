// KafkaCtl: one long-lived Admin client that moves leaders on command, so a
// test pays for one JVM start instead of one per move. Reads one command per
// line on stdin, answers one JSON line per command on stdout (logs go to
// stderr). It only ever talks to the cluster it was given; it must never
// decide a test verdict itself (it reports, the Python side asserts).
//
//   java -cp "<kafka lib>/*:<classes>" KafkaCtl 127.0.0.1:9092
//   ping | cluster | features
//   create TOPIC PARTITIONS ASSIGNMENT [key=value ...]   ASSIGNMENT: 1:2:3,2:3:1,...
//   describe TOPIC          leader, replicas, isr, elr per partition
//   move TOPIC PARTITION BROKER   reorder replicas with BROKER first, then a
//                                 PREFERRED election (leader epoch +1)
//   reassign TOPIC PARTITION R1,R2,...   waits until the reassignment is done
//   elect TOPIC PARTITION   PREFERRED election of replicas[0]
//   elect-unclean TOPIC PARTITION   UNCLEAN election of a leaderless partition:
//                           the first live replica, in or out of the ISR/ELR
//   delete TOPIC
//   scram MECHANISM USER PASSWORD   alterUserScramCredentials (KIP-554), 4096 iterations
//   scram-describe USER     the SCRAM mechanisms USER has credentials for
//   quit
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.ElectionNotNeededException;

public class KafkaCtl {
  static final long WAIT_MS = 60_000;  // every wait below is bounded by this

  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
    p.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, "50");
    try (Admin admin = Admin.create(p)) {
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
      System.out.println("{\"ok\":true,\"ready\":true}");
      System.out.flush();
      String line;
      while ((line = in.readLine()) != null) {
        line = line.trim();
        if (line.isEmpty()) continue;
        String[] a = line.split("\\s+");
        if (a[0].equals("quit")) break;
        String reply;
        long t0 = System.nanoTime();
        try {
          reply = run(admin, a, t0);
        } catch (Exception e) {
          Throwable c = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
          reply = "{\"ok\":false,\"error\":" + q(c.getClass().getSimpleName()) + ",\"message\":" + q(String.valueOf(c.getMessage())) + "}";
        }
        System.out.println(reply);
        System.out.flush();
      }
    }
  }

  static double ms(long t0) { return (System.nanoTime() - t0) / 1e6; }

  static String run(Admin admin, String[] a, long t0) throws Exception {
    switch (a[0]) {
      case "ping":
        return "{\"ok\":true}";
      case "cluster": {
        DescribeClusterResult r = admin.describeCluster();
        StringBuilder b = new StringBuilder("{\"ok\":true,\"nodes\":[");
        int i = 0;
        for (Node n : r.nodes().get()) b.append(i++ > 0 ? "," : "").append(n.id());
        return b.append("],\"controller\":").append(r.controller().get().id()).append("}").toString();
      }
      case "features": {
        FeatureMetadata f = admin.describeFeatures().featureMetadata().get();
        StringBuilder b = new StringBuilder("{\"ok\":true,\"finalized\":{");
        int i = 0;
        for (Map.Entry<String, FinalizedVersionRange> e : new TreeMap<>(f.finalizedFeatures()).entrySet())
          b.append(i++ > 0 ? "," : "").append(q(e.getKey())).append(":").append(e.getValue().maxVersionLevel());
        return b.append("}}").toString();
      }
      case "create": {
        String topic = a[1];
        String[] parts = a[3].split(",");
        Map<Integer, List<Integer>> assign = new HashMap<>();
        for (int i = 0; i < parts.length; i++) assign.put(i, ints(parts[i], ":"));
        Map<String, String> cfg = new HashMap<>();
        for (int i = 4; i < a.length; i++) {
          String[] kv = a[i].split("=", 2);
          cfg.put(kv[0], kv[1]);
        }
        if (Integer.parseInt(a[2]) != parts.length) throw new IllegalArgumentException("partition count != assignment");
        admin.createTopics(List.of(new NewTopic(topic, assign).configs(cfg))).all().get();
        waitUntil(() -> leadersKnown(admin, topic, parts.length), "leaders of " + topic);
        return "{\"ok\":true,\"ms\":" + ms(t0) + "}";
      }
      case "describe":
        return "{\"ok\":true,\"partitions\":" + describe(admin, a[1]) + "}";
      case "move": {
        TopicPartition tp = new TopicPartition(a[1], Integer.parseInt(a[2]));
        int target = Integer.parseInt(a[3]);
        TopicPartitionInfo info = partition(admin, tp);
        List<Integer> order = new ArrayList<>();
        order.add(target);
        for (Node n : info.replicas()) if (n.id() != target) order.add(n.id());
        if (!order.equals(ids(info.replicas()))) {
          // Same replica set, new order: completes at once and moves nothing.
          reassignAndWait(admin, tp, order);
        }
        long elect0 = System.nanoTime();
        try {
          admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get().get(tp)
              .ifPresent(e -> { throw new RuntimeException(e); });
        } catch (RuntimeException e) {
          if (!(e.getCause() instanceof ElectionNotNeededException)) throw e;
        }
        waitUntil(() -> partition(admin, tp).leader() != null && partition(admin, tp).leader().id() == target,
                  "leader " + target + " for " + tp);
        return "{\"ok\":true,\"ms\":" + ms(t0) + ",\"elect_ms\":" + ms(elect0) + ",\"replicas\":" + order + "}";
      }
      case "reassign": {
        TopicPartition tp = new TopicPartition(a[1], Integer.parseInt(a[2]));
        reassignAndWait(admin, tp, ints(a[3], ","));
        return "{\"ok\":true,\"ms\":" + ms(t0) + "}";
      }
      case "elect": {
        TopicPartition tp = new TopicPartition(a[1], Integer.parseInt(a[2]));
        Optional<Throwable> e = admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get().get(tp);
        return "{\"ok\":true,\"ms\":" + ms(t0) + ",\"result\":" + q(e.map(x -> x.getClass().getSimpleName()).orElse("elected")) + "}";
      }
      case "elect-unclean": {
        // The operator's override of unclean.leader.election.enable=false:
        // the controller answers ELECTION_NOT_NEEDED while a leader exists.
        TopicPartition tp = new TopicPartition(a[1], Integer.parseInt(a[2]));
        Optional<Throwable> e = admin.electLeaders(ElectionType.UNCLEAN, Set.of(tp)).partitions().get().get(tp);
        if (e.isPresent()) throw e.get() instanceof Exception ? (Exception) e.get() : new RuntimeException(e.get());
        waitUntil(() -> partition(admin, tp).leader() != null, "a leader for " + tp);
        return "{\"ok\":true,\"ms\":" + ms(t0) + ",\"leader\":" + partition(admin, tp).leader().id() + "}";
      }
      case "delete":
        admin.deleteTopics(List.of(a[1])).all().get();
        return "{\"ok\":true}";
      case "scram": {
        ScramCredentialInfo info = new ScramCredentialInfo(ScramMechanism.fromMechanismName(a[1]), 4096);
        admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(a[2], info, a[3]))).all().get();
        return "{\"ok\":true,\"ms\":" + ms(t0) + "}";
      }
      case "scram-describe": {
        List<String> mechs = new ArrayList<>();
        for (ScramCredentialInfo i : admin.describeUserScramCredentials(List.of(a[1])).description(a[1]).get().credentialInfos())
          mechs.add(q(i.mechanism().mechanismName()));
        return "{\"ok\":true,\"mechanisms\":" + mechs + "}";
      }
      default:
        throw new IllegalArgumentException("unknown command " + a[0]);
    }
  }

  interface Check { boolean ok() throws Exception; }

  static void waitUntil(Check c, String what) throws Exception {
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (!c.ok()) {
      if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out waiting for " + what);
      Thread.sleep(20);
    }
  }

  static void reassignAndWait(Admin admin, TopicPartition tp, List<Integer> replicas) throws Exception {
    admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(replicas)))).all().get();
    waitUntil(() -> admin.listPartitionReassignments(Set.of(tp)).reassignments().get().isEmpty()
                    && ids(partition(admin, tp).replicas()).equals(replicas),
              "reassignment of " + tp + " to " + replicas);
  }

  static boolean leadersKnown(Admin admin, String topic, int n) throws Exception {
    try {
      TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
      return d.partitions().size() == n && d.partitions().stream().allMatch(p -> p.leader() != null && p.leader().id() >= 0);
    } catch (ExecutionException e) {
      return false;
    }
  }

  static TopicPartitionInfo partition(Admin admin, TopicPartition tp) throws Exception {
    TopicDescription d = admin.describeTopics(List.of(tp.topic())).allTopicNames().get().get(tp.topic());
    return d.partitions().get(tp.partition());
  }

  static String describe(Admin admin, String topic) throws Exception {
    TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
    StringBuilder b = new StringBuilder("[");
    int i = 0;
    for (TopicPartitionInfo p : d.partitions()) {
      b.append(i++ > 0 ? "," : "").append("{\"partition\":").append(p.partition())
       .append(",\"leader\":").append(p.leader() == null ? -1 : p.leader().id())
       .append(",\"replicas\":").append(ids(p.replicas()))
       .append(",\"isr\":").append(ids(p.isr()))
       .append(",\"elr\":").append(elr(p)).append("}");
    }
    return b.append("]").toString();
  }

  // ELR (KIP-966) is in TopicPartitionInfo from 3.8 on; the same source also
  // runs against the 3.6 line, where it is absent (reported as null).
  @SuppressWarnings("unchecked")
  static List<Integer> elr(TopicPartitionInfo p) {
    try {
      return ids((List<Node>) TopicPartitionInfo.class.getMethod("elr").invoke(p));
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }

  static List<Integer> ids(List<Node> nodes) {
    List<Integer> out = new ArrayList<>();
    if (nodes != null) for (Node n : nodes) out.add(n.id());
    return out;
  }

  static List<Integer> ints(String s, String sep) {
    List<Integer> out = new ArrayList<>();
    for (String x : s.split(sep)) out.add(Integer.parseInt(x));
    return out;
  }

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
