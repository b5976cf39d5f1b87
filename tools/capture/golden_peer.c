/* tools/capture/golden_peer.c: the librdkafka 2.15.1 side of the golden-frame
 * capture (tools/capture/capture_golden.py). It runs a one-broker
 * rd_kafka_mock_cluster, makes the broker advertise the capture relay's
 * address, and on command runs librdkafka clients (idempotent acks=all
 * producer, group consumer, metadata and offset look-ups, share consumer)
 * through that relay, so that both sides of every frame are librdkafka's.
 *
 * Protocol on stdin/stdout (one line each):
 *   start:               prints "bootstrap HOST:PORT" (the mock's real listener)
 *   advertise PORT       broker 1 advertises 127.0.0.1:PORT  -> "ok"
 *   clients              producer, consumer, metadata, offsets -> "ok"/"error ..."
 *   bump                 partition 0's leader is re-elected (leader epoch + 1) -> "ok"
 *   validate             a consumer assigned an offset with an old leader epoch
 *                        (librdkafka validates it: OffsetForLeaderEpoch) -> "ok"
 *   share                share consumer reads and acknowledges -> "ok"
 *   quit
 * Test tooling only: never linked into epochgate, never used by a test run.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kTopic = "golden";
static char g_bootstrap[128] = "";

static rd_kafka_conf_t *base_conf(const char *client_id) {
  char err[256];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_conf_set(c, "bootstrap.servers", g_bootstrap, err, sizeof err);
  rd_kafka_conf_set(c, "client.id", client_id, err, sizeof err);
  rd_kafka_conf_set(c, "topic.metadata.refresh.interval.ms", "1000", err, sizeof err);
  const char *debug = getenv("GOLDEN_PEER_DEBUG"); /* e.g. "cgrp,fetch,protocol" */
  if (debug && *debug) rd_kafka_conf_set(c, "debug", debug, err, sizeof err);
  return c;
}

static int set(rd_kafka_conf_t *c, const char *k, const char *v) {
  char err[256];
  if (rd_kafka_conf_set(c, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
    printf("error %s=%s: %s\n", k, v, err);
    return -1;
  }
  return 0;
}

static int produce(void) {
  char err[256];
  rd_kafka_conf_t *c = base_conf("golden-producer");
  if (set(c, "acks", "all") || set(c, "enable.idempotence", "true") || set(c, "linger.ms", "5"))
    return -1;
  rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
  if (!p) {
    printf("error producer: %s\n", err);
    return -1;
  }
  for (int i = 0; i < 10; ++i) {
    char key[16], val[64];
    snprintf(key, sizeof key, "k%d", i);
    snprintf(val, sizeof val, "golden value %d", i);
    rd_kafka_producev(p, RD_KAFKA_V_TOPIC(kTopic), RD_KAFKA_V_PARTITION(0),
                      RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(val, strlen(val)),
                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  }
  rd_kafka_flush(p, 10000);
  /* Metadata for all topics, then ListOffsets via the watermark look-up and
   * offsets_for_times. */
  const struct rd_kafka_metadata *md = NULL;
  if (rd_kafka_metadata(p, 1, NULL, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR)
    rd_kafka_metadata_destroy(md);
  int64_t lo = 0, hi = 0;
  rd_kafka_query_watermark_offsets(p, kTopic, 0, &lo, &hi, 5000);
  rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(t, kTopic, 0)->offset = 1000;
  rd_kafka_offsets_for_times(p, t, 5000);
  rd_kafka_topic_partition_list_destroy(t);
  int left = rd_kafka_outq_len(p);
  rd_kafka_destroy(p);
  return left == 0 ? 0 : -1;
}

static int consume(const char *client_id) {
  char err[256];
  rd_kafka_conf_t *c = base_conf(client_id);
  if (set(c, "group.id", "golden-group") || set(c, "auto.offset.reset", "earliest") ||
      set(c, "enable.auto.commit", "false"))
    return -1;
  rd_kafka_t *k = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
  if (!k) {
    printf("error consumer: %s\n", err);
    return -1;
  }
  rd_kafka_poll_set_consumer(k);
  rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(t, kTopic, RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(k, t);
  rd_kafka_topic_partition_list_destroy(t);
  int got = 0;
  for (int i = 0; i < 100 && got < 10; ++i) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(k, 200);
    if (!m) continue;
    if (!m->err) ++got;
    rd_kafka_message_destroy(m);
  }
  rd_kafka_commit(k, NULL, 0);
  rd_kafka_consumer_close(k);
  rd_kafka_destroy(k);
  return got > 0 ? 0 : -1;
}

/* Assigns golden[0] at offset 5 with leader epoch 0; after "bump" the
 * partition's epoch is higher, so librdkafka validates the position with an
 * OffsetForLeaderEpoch request (KIP-320) before fetching. */
static int validate(void) {
  char err[256];
  rd_kafka_conf_t *c = base_conf("golden-validator");
  if (set(c, "group.id", "golden-validator-group") || set(c, "enable.auto.commit", "false"))
    return -1;
  rd_kafka_t *k = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
  if (!k) {
    printf("error validator: %s\n", err);
    return -1;
  }
  rd_kafka_poll_set_consumer(k);
  rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(t, kTopic, 0);
  tp->offset = 5;
  rd_kafka_topic_partition_set_leader_epoch(tp, 0);
  rd_kafka_assign(k, t);
  rd_kafka_topic_partition_list_destroy(t);
  int got = 0;
  for (int i = 0; i < 50 && got < 3; ++i) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(k, 200);
    if (!m) continue;
    if (!m->err) ++got;
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(k);
  rd_kafka_destroy(k);
  return got > 0 ? 0 : -1;
}

static int share_consume(void) {
  char err[256];
  rd_kafka_conf_t *c = base_conf("golden-share");
  if (set(c, "group.id", "golden-share-group")) return -1;
  rd_kafka_share_t *s = rd_kafka_share_consumer_new(c, err, sizeof err);
  if (!s) {
    printf("error share consumer: %s\n", err);
    return -1;
  }
  rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(t, kTopic, RD_KAFKA_PARTITION_UA);
  rd_kafka_share_subscribe(s, t);
  rd_kafka_topic_partition_list_destroy(t);
  size_t got = 0;
  for (int i = 0; i < 50 && got == 0; ++i) {
    rd_kafka_messages_t *batch = NULL;
    rd_kafka_error_t *e = rd_kafka_share_poll(s, 200, &batch);
    if (e) rd_kafka_error_destroy(e);
    size_t n = rd_kafka_messages_count(batch);
    for (size_t j = 0; j < n; ++j) {
      const rd_kafka_message_t *m = rd_kafka_messages_get(batch, j);
      if (!m->err) {
        ++got;
        rd_kafka_share_acknowledge_type(s, m, RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_ACCEPT);
      }
    }
    rd_kafka_messages_destroy(batch);
  }
  rd_kafka_topic_partition_list_t *results = NULL;
  rd_kafka_error_t *e = rd_kafka_share_commit_sync(s, 5000, &results);
  if (e) rd_kafka_error_destroy(e);
  if (results) rd_kafka_topic_partition_list_destroy(results);
  e = rd_kafka_share_consumer_close(s);
  if (e) rd_kafka_error_destroy(e);
  e = rd_kafka_share_destroy(s);
  if (e) rd_kafka_error_destroy(e);
  return got > 0 ? 0 : -1;
}

int main(void) {
  char err[256];
  setvbuf(stdout, NULL, _IOLBF, 0);
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_conf_set(c, "log_level", "3", err, sizeof err);
  rd_kafka_t *owner = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
  if (!owner) {
    fprintf(stderr, "rd_kafka_new: %s\n", err);
    return 1;
  }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(owner, 1);
  if (!mc) {
    fprintf(stderr, "mock cluster failed\n");
    return 1;
  }
  rd_kafka_mock_topic_create(mc, kTopic, 1, 1);
  rd_kafka_mock_sharegroup_set_auto_offset_reset(mc, 1); /* earliest */
  printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));

  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    int port = 0;
    if (sscanf(line, "advertise %d", &port) == 1) {
      rd_kafka_mock_broker_set_host_port(mc, 1, "127.0.0.1", port);
      snprintf(g_bootstrap, sizeof g_bootstrap, "127.0.0.1:%d", port);
      printf("ok\n");
    } else if (strncmp(line, "clients", 7) == 0) {
      int rc = produce();
      if (rc == 0) rc = consume("golden-consumer");
      printf(rc == 0 ? "ok\n" : "error clients\n");
    } else if (strncmp(line, "bump", 4) == 0) {
      rd_kafka_mock_partition_set_leader(mc, kTopic, 0, 1);
      printf("ok\n");
    } else if (strncmp(line, "validate", 8) == 0) {
      printf(validate() == 0 ? "ok\n" : "error validate\n");
    } else if (strncmp(line, "share", 5) == 0) {
      printf(share_consume() == 0 ? "ok\n" : "error share\n");
    } else if (strncmp(line, "quit", 4) == 0) {
      break;
    } else {
      printf("error unknown command\n");
    }
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(owner);
  return 0;
}
