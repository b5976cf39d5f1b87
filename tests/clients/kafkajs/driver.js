// KafkaJS (pure JavaScript) driven through the ops of tests/clients' driver
// protocol, with snappy, lz4 and zstd from their codec packages. Modules
// come from the cache tools/clients/fetch-node.sh fills.
'use strict';

const path = require('path');
const cli = require('../jscommon/driver_cli');

const CLIENT = 'kafkajs';
const mods = cli.modules(CLIENT);
const kafkajs = require(path.join(mods, 'kafkajs'));
const VERSION = require(path.join(mods, 'kafkajs', 'package.json')).version;
const { Kafka, CompressionTypes, CompressionCodecs, Partitioners, logLevel } = kafkajs;

// KafkaJS ships gzip only; the others are codec packages registered here.
CompressionCodecs[CompressionTypes.Snappy] = require(path.join(mods, 'kafkajs-snappy'));
CompressionCodecs[CompressionTypes.LZ4] = new (require(path.join(mods, 'kafkajs-lz4')))().codec;
CompressionCodecs[CompressionTypes.ZSTD] = require(path.join(mods, '@kafkajs/zstd'))();

const COMPRESSION = {
  none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD,
};
const ACKS = { 0: 0, 1: 1, all: -1 };
const LARGE = 4 * 1024 * 1024;
const UNSUPPORTED = {
  'consume-assign': `KafkaJS ${VERSION} has no manual partition assignment (its consumer always joins a group)`,
  'share-consume': `KafkaJS ${VERSION} has no share consumer (KIP-932)`,
};

// KafkaJS 2's default partitioner, named so it does not warn on every producer.
const producerOf = (k, opts) => k.producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false, ...opts });

function kafka(a) {
  return new Kafka({
    clientId: 'kafkajs-driver', brokers: a.brokers, connectionTimeout: 5000,
    requestTimeout: Math.min(15000, Math.max(1000, cli.remaining(a, 1000))),
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2000 },
    // INFO: group joins with their duration, to the cell's log file.
    logLevel: logLevel.INFO,
    logCreator: () => ({ namespace, level, log }) => process.stderr.write(
      `kafkajs ${level} ${namespace} ${JSON.stringify(log)}\n`),
  });
}

async function produceAll(a, producer, n, { prefix = '', size = a.recordSize, partitionOf = null, onAck = null, send = null, sequential = false, perSend = 0 } = {}) {
  const pacer = new cli.Pacer(a.rate);
  const sender = send || ((msgs) => producer.send({
    topic: a.topic, messages: msgs, acks: ACKS[a.acks], compression: COMPRESSION[a.compression],
  }));
  let acked = 0;
  let error = '';
  const metas = [];
  const pending = [];
  const batch = perSend || (a.rate > 0 || onAck ? 1 : 100);
  for (let i = 0; i < n && !cli.expired(a); i += batch) {
    await pacer.wait();
    const msgs = [];
    for (let j = i; j < Math.min(n, i + batch); j++) {
      const m = { key: cli.key(j), value: cli.value(j, size, prefix) };
      if (partitionOf) m.partition = partitionOf(j);
      msgs.push(m);
    }
    const first = i;
    pending.push(sender(msgs).then((md) => {
      acked += msgs.length;
      metas.push(...md);
      if (onAck) onAck(md[0], first);
    }, (e) => { error = error || `${e.name}: ${e.message}`; }));
    // Unpaced batches go one after another. Paced sends run concurrently,
    // except with idempotence: KafkaJS numbers a partition's records when
    // send() is called, and concurrent sends retried across a leader move
    // reached the broker out of order (OUT_OF_ORDER_SEQUENCE_NUMBER, straight
    // at the cluster as through epochgate), so those wait for each ack.
    if (batch > 1 || sequential) await pending[pending.length - 1];
  }
  await cli.bounded(a, Promise.all(pending), 'produce');
  return { acked, error, metas };
}

// A group consumer from the beginning, until `want` records, `stop()` says
// so, or 1.5 s before the deadline (which an op may bring forward).
// commitEach: commit each record's offset once it is processed, so a member
// that rejoins the group resumes after it instead of re-reading.
async function readGroup(a, k, group, want, { onMessage = null, readCommitted = false, maxBytes = 0, stop = () => false, commitEach = false } = {}) {
  // sessionTimeout 6000 ms, the least a Kafka broker accepts by default
  // (group.min.session.timeout.ms): KafkaJS rejoins its group on every
  // stale-leader Fetch error, and the mock cluster holds each rejoin of a
  // stable group for sessionTimeout - 1 s before it answers, so a leader
  // move costs it 3-5 such rounds (9 s each at 10000 ms).
  const opts = { groupId: group, sessionTimeout: 6000, heartbeatInterval: 1000, readUncommitted: !readCommitted, retry: { retries: 8 } };
  if (maxBytes) Object.assign(opts, { maxBytesPerPartition: maxBytes, maxBytes });
  const c = k.consumer(opts);
  const got = [];
  try {
    await c.connect();
    await c.subscribe({ topic: a.topic, fromBeginning: true });
    await c.run({
      autoCommit: commitEach,
      autoCommitThreshold: commitEach ? 1 : null,
      eachMessage: async ({ partition, message }) => {
        got.push({ partition, offset: Number(message.offset), value: message.value });
        if (onMessage) onMessage(partition, message);
      },
    });
    while (got.length < want && !stop() && cli.remaining(a, 1500) > 0) await cli.sleep(20);
    const last = new Map();
    for (const m of got) last.set(m.partition, Math.max(last.get(m.partition) ?? -1, m.offset));
    if (got.length) {
      // Bounded: in a rebalance KafkaJS retries the commit, and the cell's
      // error should say so rather than the driver's watchdog.
      await cli.bounded(a, c.commitOffsets([...last].map(([partition, off]) => ({ topic: a.topic, partition, offset: String(off + 1) }))),
        'final offset commit', -1000);
    }
  } finally {
    await cli.bounded(a, c.disconnect(), 'consumer disconnect', -1500).catch((e) => console.error(e.message));
  }
  return got;
}

function checkOrder(msgs) {
  const last = new Map();
  for (const m of msgs) {
    if (m.offset <= (last.get(m.partition) ?? -1)) {
      throw new cli.Failed(`partition ${m.partition}: offset ${m.offset} after ${last.get(m.partition)}`);
    }
    last.set(m.partition, m.offset);
  }
}

async function withAdmin(a, fn) {
  const ad = kafka(a).admin();
  await ad.connect();
  try {
    return await fn(ad);
  } finally {
    await ad.disconnect();
  }
}

const brokersOf = (cluster) => cluster.brokers.map((b) => [b.host, b.port]).sort();

// The topic's metadata, asked again within the bound while the broker that
// answers has not applied its creation yet (UNKNOWN_TOPIC_OR_PARTITION).
async function topicMetadata(a, ad, topic) {
  for (;;) {
    try {
      return await ad.fetchTopicMetadata({ topics: [topic] });
    } catch (e) {
      if (e.type !== 'UNKNOWN_TOPIC_OR_PARTITION' || cli.expired(a)) throw e;
    }
    await cli.sleep(100);
  }
}

async function opMetadata(a) {
  return withAdmin(a, async (ad) => {
    const md = await topicMetadata(a, ad, a.topic);
    const cluster = await ad.describeCluster();
    return { brokers: brokersOf(cluster), partitions: md.topics[0].partitions.length, records: 0 };
  });
}

async function produceOp(a, producerOpts = {}) {
  const p = producerOf(kafka(a), { ...producerOpts });
  await p.connect();
  try {
    const { acked, error } = await produceAll(a, p, a.records);
    if (error || acked !== a.records) throw new cli.Failed(`${acked} of ${a.records} acknowledged: ${error}`);
    return { records: acked };
  } finally {
    await p.disconnect();
  }
}

async function opProduceIdempotent(a) {
  a.acks = 'all';
  return produceOp(a, { idempotent: true, maxInFlightRequests: 1 });
}

async function opTransactions(a) {
  const k = kafka(a);
  const p = producerOf(k, { transactionalId: a.transactionalId, idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  try {
    a.acks = 'all';
    for (const [prefix, finish] of [['c', 'commit'], ['a', 'abort']]) {
      const txn = await p.transaction();
      const { acked, error } = await produceAll(a, null, a.records, {
        prefix, send: (msgs) => txn.send({ topic: a.topic, messages: msgs, compression: COMPRESSION[a.compression] }),
      });
      if (prefix === 'c' && (error || acked !== a.records)) {
        throw new cli.Failed(`committed transaction: ${acked} of ${a.records} acknowledged: ${error}`);
      }
      await txn[finish]();
    }
  } finally {
    await p.disconnect();
  }
  // KafkaJS reads only through a group and cannot tell where the log ends
  // for read_committed, so it reads until the committed ones are all in
  // and then half a second more: any aborted record would follow them.
  let seenAll = null;
  const want = a.records;
  const values = [];
  await readGroup(a, k, `${a.group}-read`, Number.MAX_SAFE_INTEGER, {
    readCommitted: true,
    onMessage: (_, m) => {
      values.push(m.value.toString());
      if (values.filter((v) => v.startsWith('c')).length >= want && !seenAll) seenAll = Date.now();
    },
    stop: () => seenAll !== null && Date.now() - seenAll > 500,
  });
  const committed = values.filter((v) => v.startsWith('c')).sort();
  const aborted = values.filter((v) => v.startsWith('a'));
  const expected = Array.from({ length: want }, (_, i) => cli.value(i, a.recordSize, 'c')).sort();
  if (aborted.length || JSON.stringify(committed) !== JSON.stringify(expected)) {
    throw new cli.Failed(`read_committed saw ${committed.length} committed (want ${want}) and ${aborted.length} aborted records`);
  }
  return { records: committed.length };
}

function groupProtocol(a) {
  if (a.groupProtocol !== 'classic') throw new cli.Unsupported(`KafkaJS ${VERSION} has no KIP-848 consumer group protocol`);
}

async function opConsumeGroup(a) {
  groupProtocol(a);
  const got = await readGroup(a, kafka(a), a.group, a.records);
  checkOrder(got);
  if (got.length < a.records) throw new cli.Failed(`read ${got.length} of ${a.records} records`);
  return { records: got.length };
}

async function opOffsets(a) {
  return withAdmin(a, async (ad) => {
    await ad.setOffsets({ groupId: a.group, topic: a.topic, partitions: [{ partition: 0, offset: '5' }] });
    const got = await ad.fetchOffsets({ groupId: a.group, topics: [a.topic] });
    const p0 = got[0].partitions.find((p) => p.partition === 0);
    if (!p0 || p0.offset !== '5') throw new cli.Failed(`committed offset 5, fetched ${p0 && p0.offset}`);
    return { records: 0 };
  });
}

async function opLargeRecord(a) {
  const size = Math.max(a.recordSize, 1024 * 1024);
  const k = kafka(a);
  const p = producerOf(k, {});
  await p.connect();
  let r;
  try {
    r = await produceAll(a, p, 1, { size });
  } finally {
    await p.disconnect();
  }
  if (r.error || r.acked !== 1) throw new cli.Failed(`produce of a ${size}-byte record: ${r.error || 'not acknowledged'}`);
  const got = await readGroup(a, k, a.group, 1, { maxBytes: LARGE });
  if (!got.length || got[0].value.toString() !== cli.value(0, size)) {
    throw new cli.Failed(`read back ${got.length ? `${got[0].value.length} different bytes` : 'nothing'}`);
  }
  return { records: 1 };
}

async function opManyPartitions(a) {
  const k = kafka(a);
  const count = await withAdmin(a, async (ad) => (await topicMetadata(a, ad, a.topic)).topics[0].partitions.length);
  // One send() per record, one after another: a send() that spans several
  // brokers is written twice in part when one broker answers NOT_LEADER (a
  // leader not yet serving its new partition) while another's request is in
  // flight. KafkaJS 2.2.4's sendMessages awaits Promise.all, which rejects on
  // the first error; the retry lists the brokers without a response before
  // the in-flight request returns, waits for that broker's lock, and sends
  // its partitions again with the sequence numbers after the first request's,
  // so even the idempotent producer stores them twice (33 records of 200,
  // straight at the cluster and through epochgate, distinct offsets).
  const p = producerOf(k, { idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  let r;
  try {
    r = await produceAll(a, p, count, { partitionOf: (i) => i, perSend: 1, sequential: true });
  } finally {
    await p.disconnect();
  }
  if (r.error || r.acked !== count) throw new cli.Failed(`${r.acked} of ${count} acknowledged: ${r.error}`);
  const got = await readGroup(a, k, a.group, count);
  const seen = new Set(got.map((m) => m.partition));
  if (got.length !== count || seen.size !== count) {
    // Tells a record stored twice (distinct offsets) from one delivered twice.
    const offsets = new Set(got.map((m) => `${m.partition}:${m.offset}`));
    throw new cli.Failed(`read ${got.length} records (${offsets.size} distinct partition:offset) from ${seen.size} of ${count} partitions`);
  }
  return { records: got.length, partitions: count };
}

async function opAdmin(a) {
  const name = `${a.topic}-admin`;
  return withAdmin(a, async (ad) => {
    await ad.createTopics({ topics: [{ topic: name, numPartitions: 3 }], waitForLeaders: true, timeout: cli.remaining(a, 5000) });
    const md = await topicMetadata(a, ad, name);
    if (md.topics[0].partitions.length !== 3) throw new cli.Failed(`describe of the new topic: ${JSON.stringify(md)}`);
    const cluster = await ad.describeCluster();
    // Any broker may answer; one that has not applied the create yet lists
    // without the topic, so ask again within the bound.
    while (!(await ad.listTopics()).includes(name)) {
      if (cli.expired(a)) throw new cli.Failed(`listTopics lacks ${name}`);
      await cli.sleep(100);
    }
    await ad.deleteTopics({ topics: [name], timeout: cli.remaining(a, 2000) });
    return { records: 0, brokers: brokersOf(cluster) };
  });
}

async function opProduceMove(a) {
  const log = new cli.MoveLog(a);
  a.acks = 'all';
  const p = producerOf(kafka(a), { idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  try {
    const { acked, error } = await produceAll(a, p, a.records, {
      onAck: (md, i) => log.event(md.partition, Number(md.baseOffset), i), sequential: true,
    });
    if (error || acked !== a.records) throw new cli.Failed(`${acked} of ${a.records} acknowledged: ${error}`);
    return { records: acked, max_gap_ms: Math.round(log.maxGapMs * 10) / 10 };
  } finally {
    log.close();
    await p.disconnect();
  }
}

async function opConsumeMove(a) {
  groupProtocol(a);
  const log = new cli.MoveLog(a);
  const seen = new Set();
  await readGroup(a, kafka(a), a.group, Number.MAX_SAFE_INTEGER, {
    onMessage: (partition, m) => {
      log.event(partition, Number(m.offset), cli.indexOf(m.value));
      seen.add(cli.indexOf(m.value));
    },
    stop: () => seen.size >= a.records,
    // KafkaJS answers a stale-leader error on Fetch by rejoining the group
    // (consumerGroup.js recoverFromFetch -> joinAndSync), after which it
    // fetches from the group's committed offsets: without a commit per
    // record it reads everything again from the start.
    commitEach: true,
  });
  log.close();
  if (seen.size < a.records) throw new cli.Failed(`read ${seen.size} of ${a.records} distinct records`);
  return { records: log.count, max_gap_ms: Math.round(log.maxGapMs * 10) / 10 };
}

cli.run(CLIENT, VERSION, {
  metadata: opMetadata, produce: (a) => produceOp(a), 'produce-idempotent': opProduceIdempotent,
  transactions: opTransactions, 'consume-group': opConsumeGroup, offsets: opOffsets,
  'large-record': opLargeRecord, 'many-partitions': opManyPartitions, admin: opAdmin,
  'produce-move': opProduceMove, 'consume-move': opConsumeMove,
}, UNSUPPORTED);
