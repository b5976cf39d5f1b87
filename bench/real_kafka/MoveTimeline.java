// MoveTimeline: the Java client (kafka-clients) across one leader move, for
// bench/real_kafka.py. An idempotent producer (acks=all, linger.ms=0) sends
// numbered records to partition 0 of --topic at --rate per second for
// --seconds; a consumer assigned to partition 0 reads them as they come; at
// --move-at-ms an Admin client on the cluster itself (--mover) reorders the
// replicas and runs a PREFERRED election (leader epoch +1).
//
// The record that marks recovery is the first one the consumer sees written
// under the new leader epoch (ConsumerRecord.leaderEpoch()): its
// acknowledgement and its arrival at the consumer, in ms after the move was
// issued, are what the bench reports. Prints one JSON line; with --timeline F
// also one CSV row per record (send, ack and fetch times relative to the move,
// offset, leader epoch, error), the client's per-message KIP-951 timeline.
// The JSON also carries the move's wall-clock time (move_wall_ms, ms since
// the epoch) to line the timeline up with epochgate's and the client's logs,
// and counts deliveries of a record seen before (duplicates) and
// of an offset not above the last one delivered (out_of_order). move_mono_ns
// is the move's System.nanoTime() stamp: CLOCK_MONOTONIC on Linux, the clock
// another process on the machine (a kafka-python consumer beside this one)
// stamps its records with.
//
//   java -cp "<kafka lib>/*:<classes>" MoveTimeline --bootstrap B --mover D
//        --topic T [--rate 200] [--seconds 8] [--move-at-ms 3000] [--timeline F]
import java.io.PrintWriter;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class MoveTimeline {
  static final class Rec {
    long sendNs, ackNs = -1, fetchNs = -1, offset = -1;
    int epoch = -1;
    String error = "";
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> o = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    String topic = o.get("topic");
    int rate = Integer.parseInt(o.getOrDefault("rate", "200"));
    int seconds = Integer.parseInt(o.getOrDefault("seconds", "8"));
    long moveAtMs = Long.parseLong(o.getOrDefault("move-at-ms", "3000"));
    int n = rate * seconds;
    Rec[] recs = new Rec[n];
    TopicPartition tp = new TopicPartition(topic, 0);

    Properties pp = new Properties();
    pp.put("bootstrap.servers", o.get("bootstrap"));
    pp.put("key.serializer", StringSerializer.class.getName());
    pp.put("value.serializer", StringSerializer.class.getName());
    pp.put("acks", "all");
    pp.put("enable.idempotence", "true");
    pp.put("linger.ms", "0");
    pp.put("delivery.timeout.ms", "60000");
    Properties cp = new Properties();
    cp.put("bootstrap.servers", o.get("bootstrap"));
    cp.put("key.deserializer", StringDeserializer.class.getName());
    cp.put("value.deserializer", StringDeserializer.class.getName());
    cp.put("fetch.max.wait.ms", "50");

    Map<Integer, Long> fetched = new ConcurrentHashMap<>();
    Map<Integer, Integer> fetchedEpoch = new ConcurrentHashMap<>();
    StopFlag stop = new StopFlag();
    KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
    consumer.assign(List.of(tp));
    consumer.seekToEnd(List.of(tp));
    consumer.position(tp);  // resolve "end" before the first record is sent
    // Deliveries of a record seen before, and of an offset not above the
    // last one delivered (the consumer's own order within the partition).
    long[] dupOoo = {0, 0, -1};  // duplicates, out of order, last offset
    Thread reader = new Thread(() -> {
      while (!stop.v) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(20))) {
          int seq = Integer.parseInt(r.value());
          if (fetched.containsKey(seq)) dupOoo[0]++;
          if (r.offset() <= dupOoo[2]) dupOoo[1]++;
          dupOoo[2] = r.offset();
          fetched.putIfAbsent(seq, System.nanoTime());
          fetchedEpoch.putIfAbsent(seq, r.leaderEpoch().orElse(-1));
        }
      }
    });
    reader.start();

    long[] move = {0, 0};  // issued, done (nanoTime)
    long[] moveWall = {0};  // issued, ms since the epoch: to line up with epochgate's and the brokers' logs
    String[] moveResult = {"none"};
    long start = System.nanoTime();
    Thread mover = new Thread(() -> {
      try {
        Thread.sleep(moveAtMs);
        Properties ap = new Properties();
        ap.put("bootstrap.servers", o.get("mover"));
        ap.put("client.id", "eg-mover");
        try (Admin ad = Admin.create(ap)) {
          TopicPartitionInfo info = ad.describeTopics(List.of(topic)).allTopicNames().get().get(topic)
              .partitions().get(0);
          int target = 1 + info.leader().id() % 3;
          List<Integer> order = new ArrayList<>(List.of(target));
          for (Node nd : info.replicas()) if (nd.id() != target) order.add(nd.id());
          move[0] = System.nanoTime();
          moveWall[0] = System.currentTimeMillis();
          ad.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(order)))).all().get();
          while (!ad.listPartitionReassignments(Set.of(tp)).reassignments().get().isEmpty()) Thread.sleep(10);
          Optional<Throwable> e = ad.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get().get(tp);
          move[1] = System.nanoTime();
          moveResult[0] = e.map(x -> x.getClass().getSimpleName()).orElse("moved:" + info.leader().id() + "->" + target);
        }
      } catch (Exception e) {
        moveResult[0] = String.valueOf(e);
      }
    });
    mover.start();

    try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
      for (int i = 0; i < n; i++) {
        long due = start + (long) i * 1_000_000_000L / rate;
        long wait = due - System.nanoTime();
        if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        Rec r = new Rec();
        recs[i] = r;
        r.sendNs = System.nanoTime();
        producer.send(new ProducerRecord<>(topic, 0, null, Integer.toString(i)), (md, e) -> {
          r.ackNs = System.nanoTime();
          if (e != null) r.error = e.getClass().getSimpleName();
          else r.offset = md.offset();
        });
      }
      producer.flush();
    }
    mover.join();
    long deadline = System.currentTimeMillis() + 20000;
    while (fetched.size() < n && System.currentTimeMillis() < deadline) Thread.sleep(20);
    stop.v = true;
    reader.join();
    consumer.close();

    int oldEpoch = -1, first = -1, errors = 0;
    double maxLatMs = 0;
    for (int i = 0; i < n; i++) {
      Rec r = recs[i];
      if (fetchedEpoch.containsKey(i)) r.epoch = fetchedEpoch.get(i);
      if (fetched.containsKey(i)) r.fetchNs = fetched.get(i);
      if (!r.error.isEmpty()) errors++;
      if (r.ackNs > 0) maxLatMs = Math.max(maxLatMs, (r.ackNs - r.sendNs) / 1e6);
      // The old epoch is what records acknowledged before the move were
      // stored under. A record merely sent before it can still be in flight
      // (a loaded machine, a NOT_LEADER_OR_FOLLOWER retry) and be stored
      // under the new epoch, which would then pass for the old one.
      if (r.ackNs > 0 && r.ackNs < move[0] && r.error.isEmpty() && r.epoch >= 0)
        oldEpoch = Math.max(oldEpoch, r.epoch);
    }
    for (int i = 0; i < n && move[0] > 0; i++)
      if (recs[i].epoch > oldEpoch && oldEpoch >= 0) { first = i; break; }
    if (o.containsKey("timeline")) {
      try (PrintWriter w = new PrintWriter(o.get("timeline"))) {
        w.println("seq,send_ms,ack_ms,fetch_ms,offset,leader_epoch,error");
        for (int i = 0; i < n; i++) {
          Rec r = recs[i];
          w.printf(Locale.ROOT, "%d,%.3f,%.3f,%.3f,%d,%d,%s%n", i, (r.sendNs - move[0]) / 1e6,
                   r.ackNs > 0 ? (r.ackNs - move[0]) / 1e6 : Double.NaN,
                   r.fetchNs > 0 ? (r.fetchNs - move[0]) / 1e6 : Double.NaN, r.offset, r.epoch, r.error);
        }
      }
    }
    Rec f = first >= 0 ? recs[first] : null;
    System.out.printf(Locale.ROOT, "{\"sent\":%d,\"fetched\":%d,\"errors\":%d,\"move\":\"%s\",\"move_ms\":%.1f," +
        "\"old_epoch\":%d,\"new_epoch\":%d,\"first_new_seq\":%d,\"first_new_sent_ms\":%.1f," +
        "\"first_new_ack_ms\":%.1f,\"first_new_fetch_ms\":%.1f,\"max_latency_ms\":%.1f," +
        "\"duplicates\":%d,\"out_of_order\":%d,\"move_wall_ms\":%d,\"move_mono_ns\":%d}%n",
        n, fetched.size(), errors, moveResult[0], (move[1] - move[0]) / 1e6, oldEpoch,
        f == null ? -1 : f.epoch, first, f == null ? -1.0 : (f.sendNs - move[0]) / 1e6,
        f == null ? -1.0 : (f.ackNs - move[0]) / 1e6, f == null ? -1.0 : (f.fetchNs - move[0]) / 1e6, maxLatMs,
        dupOoo[0], dupOoo[1], moveWall[0], move[0]);
    System.out.flush();
    System.exit(0);
  }

  static final class StopFlag { volatile boolean v; }
}
