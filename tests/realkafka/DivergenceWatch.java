// DivergenceWatch: Java consumers (kafka-clients, the brokers' version) of
// partition 0 of one topic that keep polling, each on its own thread, while
// the test stages an unclean leader election underneath them, plus an acks=1
// producer the test drives. It reports what each application saw (records
// with offset, leader epoch and value; LogTruncationException with its
// divergent offset; any other exception) and decides nothing: the Python
// test compares the consumers behind epochgate with those straight at the
// cluster. Logs go to stderr. Compiled together with EgDriver.java (its JSON
// quoting).
//
//   java DivergenceWatch --topic T --producer-bootstrap B --consumers "NAME@BOOTSTRAP@RESET;..."
//   stdin, one command a line, one JSON line answered on stdout each:
//     produce N PREFIX   N records "PREFIX-i" one at a time (acks=1), their offsets
//     report            every consumer's records and errors so far
//     quit
// RESET is auto.offset.reset: earliest/latest move a consumer to the first
// divergent offset itself; none makes poll() raise LogTruncationException,
// after which the consumer seeks to that offset, as an application would.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class DivergenceWatch {
  // Bounds on what one consumer keeps: the test writes a few dozen records.
  static final int MAX_EVENTS = 10_000;

  static class Watcher implements Runnable {
    final String name;
    final TopicPartition tp;
    final Properties props;
    final List<String> records = new ArrayList<>();
    final List<String> errors = new ArrayList<>();
    volatile boolean stop;
    final Thread thread = new Thread(this);

    Watcher(String name, String bootstrap, String reset, TopicPartition tp) {
      this.name = name;
      this.tp = tp;
      props = new Properties();
      props.put("bootstrap.servers", bootstrap);
      props.put("client.id", name);
      props.put("auto.offset.reset", reset);
      props.put("enable.auto.commit", "false");
      props.put("fetch.max.wait.ms", "100");
      props.put("request.timeout.ms", "15000");
      props.put("reconnect.backoff.max.ms", "500");
      props.put("key.deserializer", StringDeserializer.class.getName());
      props.put("value.deserializer", StringDeserializer.class.getName());
    }

    synchronized void add(List<String> to, String event) {
      if (to.size() < MAX_EVENTS) to.add(event);
    }

    synchronized String json() {
      return "{\"records\":" + records + ",\"errors\":" + errors + "}";
    }

    public void run() {
      try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
        c.assign(List.of(tp));
        c.seekToBeginning(List.of(tp));
        while (!stop) {
          try {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100)))
              add(records, "[" + r.offset() + "," + r.leaderEpoch().orElse(-1) + "," + q(r.value()) + "]");
          } catch (LogTruncationException e) {
            OffsetAndMetadata d = e.divergentOffsets().get(tp);
            add(errors, "{\"error\":\"LogTruncationException\",\"fetch_offset\":" + e.offsetOutOfRangePartitions().get(tp)
                + ",\"divergent_offset\":" + (d == null ? -1 : d.offset())
                + ",\"divergent_epoch\":" + (d == null ? -1 : d.leaderEpoch().orElse(-1)) + "}");
            if (d != null) c.seek(tp, d);
            else c.seekToBeginning(List.of(tp));
          } catch (RuntimeException e) {
            add(errors, "{\"error\":" + q(e.getClass().getSimpleName()) + ",\"message\":" + q(String.valueOf(e.getMessage())) + "}");
            sleep(100);
          }
        }
      }
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opt = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) opt.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    String topic = opt.get("topic");
    TopicPartition tp = new TopicPartition(topic, 0);
    Map<String, Watcher> watchers = new LinkedHashMap<>();
    for (String spec : opt.get("consumers").split(";")) {
      String[] f = spec.split("@");
      watchers.put(f[0], new Watcher(f[0], f[1], f[2], tp));
    }
    for (Watcher w : watchers.values()) w.thread.start();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    System.out.println("{\"ok\":true,\"ready\":true}");
    System.out.flush();
    String line;
    while ((line = in.readLine()) != null) {
      String[] a = line.trim().split("\\s+");
      if (a[0].equals("quit")) break;
      String reply;
      try {
        if (a[0].equals("produce")) {
          reply = produce(opt.get("producer-bootstrap"), tp, Integer.parseInt(a[1]), a[2]);
        } else if (a[0].equals("report")) {
          StringBuilder b = new StringBuilder("{\"ok\":true,\"consumers\":{");
          int i = 0;
          for (Watcher w : watchers.values()) b.append(i++ > 0 ? "," : "").append(q(w.name)).append(":").append(w.json());
          reply = b.append("}}").toString();
        } else {
          throw new IllegalArgumentException("unknown command " + a[0]);
        }
      } catch (Exception e) {
        reply = "{\"ok\":false,\"error\":" + q(e.toString()) + "}";
      }
      System.out.println(reply);
      System.out.flush();
    }
    for (Watcher w : watchers.values()) w.stop = true;
    for (Watcher w : watchers.values()) w.thread.join(30_000);
    System.exit(0);  // client threads must not hold the JVM
  }

  // acks=1 so a leader alone (its follower stopped) acknowledges: the
  // records an unclean election later loses. One at a time, in order.
  static String produce(String bootstrap, TopicPartition tp, int n, String prefix) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("acks", "1");
    p.put("enable.idempotence", "false");
    p.put("max.in.flight.requests.per.connection", "1");
    p.put("request.timeout.ms", "10000");
    p.put("delivery.timeout.ms", "60000");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    List<Long> offsets = new ArrayList<>();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      for (int i = 0; i < n; i++)
        offsets.add(producer.send(new ProducerRecord<>(tp.topic(), tp.partition(), null, prefix + "-" + i)).get().offset());
    }
    return "{\"ok\":true,\"offsets\":" + offsets + "}";
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  static String q(String s) {
    return KafkaQuote.q(s);  // EgDriver.java's, compiled with this file
  }
}
