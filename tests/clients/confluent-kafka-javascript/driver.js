// @confluentinc/kafka-javascript (a Node.js addon over librdkafka) driven
// through the ops of tests/clients' driver protocol. It uses the package's
// librdkafka-style API (Producer, KafkaConsumer, AdminClient) throughout:
// its KafkaJS-compatible layer has no manual partition assignment, which
// consume-assign and the read-backs need. Modules come from the cache
// tools/clients/fetch-node.sh fills.
'use strict';

const path = require('path');
const cli = require('../jscommon/driver_cli');

const CLIENT = 'confluent-kafka-javascript';
const mods = cli.modules(CLIENT);
const pkgDir = path.join(mods, '@confluentinc', 'kafka-javascript');
const rdk = require(pkgDir);
const VERSION = require(path.join(pkgDir, 'package.json')).version;
const BEGINNING = -2;
const LARGE = 4 * 1024 * 1024;
const UNSUPPORTED = {
  'share-consume': `@confluentinc/kafka-javascript ${VERSION} exposes no share consumer (KIP-932), though its librdkafka ${rdk.librdkafkaVersion} has one`,
};

const base = (a) => ({
  'bootstrap.servers': a.bootstrap, 'broker.address.family': 'v4', 'socket.timeout.ms': 10000,
  'client.id': 'ckjs-driver',
});

const call = (fn) => new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));

function connect(a, client) {
  return cli.bounded(a, new Promise((resolve, reject) => {
    client.connect({ timeout: Math.max(1000, cli.remaining(a, 1000)) }, (err) => (err ? reject(err) : resolve(client)));
  }), 'connect');
}

async function producer(a, extra = {}) {
  const p = new rdk.Producer({
    ...base(a), dr_cb: true, 'request.required.acks': a.acks === 'all' ? -1 : Number(a.acks),
    'compression.codec': a.compression, 'linger.ms': 5,
    'message.timeout.ms': Math.max(1000, cli.remaining(a, 2000)), ...extra,
  });
  await connect(a, p);
  p.setPollInterval(10);
  return p;
}

function disconnect(a, client) {
  return cli.bounded(a, call((cb) => client.disconnect(cb)), 'disconnect', -1500).catch((e) => console.error(e.message));
}

// Produces n records and waits for every delivery report.
async function produceAll(a, p, n, { prefix = '', size = a.recordSize, partitionOf = null, onAck = null } = {}) {
  const pacer = new cli.Pacer(a.rate);
  let acked = 0;
  let reported = 0;
  let error = '';
  const where = [];
  p.on('delivery-report', (err, r) => {
    reported += 1;
    if (err) { error = error || err.message; return; }
    acked += 1;
    where.push([r.partition, r.offset]);
    if (onAck) onAck(r.partition, r.offset, r.opaque);
  });
  let sent = 0;
  for (let i = 0; i < n && !cli.expired(a); i++) {
    await pacer.wait();
    for (;;) {
      try {
        p.produce(a.topic, partitionOf ? partitionOf(i) : null, Buffer.from(cli.value(i, size, prefix)), cli.key(i), null, i);
        sent += 1;
        break;
      } catch (e) {
        if (!/queue full/i.test(e.message) || cli.expired(a)) throw e;
        await cli.sleep(20);
      }
    }
    if (i % 100 === 99) await cli.sleep(0); // let delivery reports in
  }
  await cli.bounded(a, call((cb) => p.flush(Math.max(1, cli.remaining(a, 1000)), cb)), 'flush', 500).catch((e) => { error = error || e.message; });
  while (reported < sent && !cli.expired(a)) await cli.sleep(10);
  return { acked, error, where };
}

// A KafkaConsumer reading until `stop()` or the deadline; `setup` assigns or subscribes.
async function read(a, conf, setup, { stop, onMessage = null, eof = null } = {}) {
  const c = new rdk.KafkaConsumer({
    ...base(a), 'group.id': `assign-${a.topic}`, 'enable.auto.commit': false, ...conf,
  }, { 'auto.offset.reset': 'earliest' }); // a topic setting here: the global one is not used
  const got = [];
  let failure = null;
  c.on('data', (m) => { got.push(m); if (onMessage) onMessage(m); });
  c.on('partition.eof', (e) => { if (eof) eof.add(e.partition); });
  c.on('event.error', (e) => console.error('consumer error:', e.message));
  await connect(a, c);
  try {
    setup(c);
    c.consume();
    while (!stop(got) && !failure && cli.remaining(a, 1500) > 0) await cli.sleep(20);
    return { got, c };
  } finally {
    if (conf['group.id'] && got.length) {
      try { c.commitSync(null); } catch (e) { console.error('commit:', e.message); }
    }
    await disconnect(a, c);
  }
}

const assignAll = (a, count) => (c) => c.assign(Array.from({ length: count }, (_, p) => ({ topic: a.topic, partition: p, offset: BEGINNING })));

async function metadata(a, client, topic) {
  return cli.bounded(a, call((cb) => client.getMetadata({ topic, timeout: Math.max(1000, cli.remaining(a, 1000)) }, cb)), 'metadata');
}

async function partitionCount(a) {
  const p = await producer(a);
  try {
    const md = await metadata(a, p, a.topic);
    const t = md.topics.find((x) => x.name === a.topic);
    if (!t || !t.partitions.length) throw new cli.Failed(`topic ${a.topic} not in metadata`);
    return t.partitions.length;
  } finally {
    await disconnect(a, p);
  }
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

async function opMetadata(a) {
  const p = await producer(a);
  try {
    const md = await metadata(a, p, a.topic);
    const t = md.topics.find((x) => x.name === a.topic);
    if (!t) throw new cli.Failed(`topic ${a.topic} not in metadata`);
    return { brokers: md.brokers.map((b) => [b.host, b.port]).sort(), partitions: t.partitions.length, records: 0 };
  } finally {
    await disconnect(a, p);
  }
}

async function produceOp(a, extra = {}) {
  const p = await producer(a, extra);
  try {
    const { acked, error } = await produceAll(a, p, a.records);
    if (error || acked !== a.records) throw new cli.Failed(`${acked} of ${a.records} acknowledged: ${error}`);
    return { records: acked };
  } finally {
    await disconnect(a, p);
  }
}

async function opProduceIdempotent(a) {
  a.acks = 'all';
  return produceOp(a, { 'enable.idempotence': true });
}

async function opTransactions(a) {
  a.acks = 'all';
  const p = await producer(a, { 'transactional.id': a.transactionalId });
  const t = () => Math.max(1000, cli.remaining(a, 3000));
  try {
    await call((cb) => p.initTransactions(t(), cb));
    await call((cb) => p.beginTransaction(cb));
    const r = await produceAll(a, p, a.records, { prefix: 'c' });
    if (r.error || r.acked !== a.records) throw new cli.Failed(`committed transaction: ${r.acked} of ${a.records} acknowledged: ${r.error}`);
    await call((cb) => p.commitTransaction(t(), cb));
    await call((cb) => p.beginTransaction(cb));
    p.removeAllListeners('delivery-report');
    await produceAll(a, p, a.records, { prefix: 'a' });
    await call((cb) => p.abortTransaction(t(), cb));
  } finally {
    await disconnect(a, p);
  }
  const count = a.partitions || await partitionCount(a);
  const eof = new Set();
  const { got } = await read(a, { 'isolation.level': 'read_committed', 'enable.partition.eof': true },
    assignAll(a, count), { stop: () => eof.size >= count, eof });
  const values = got.map((m) => m.value.toString());
  const committed = values.filter((v) => v.startsWith('c')).sort();
  const aborted = values.filter((v) => v.startsWith('a'));
  const expected = Array.from({ length: a.records }, (_, i) => cli.value(i, a.recordSize, 'c')).sort();
  if (aborted.length || JSON.stringify(committed) !== JSON.stringify(expected)) {
    throw new cli.Failed(`read_committed saw ${committed.length} committed (want ${a.records}) and ${aborted.length} aborted records`);
  }
  return { records: committed.length };
}

async function opConsumeAssign(a) {
  const count = a.partitions || await partitionCount(a);
  const { got } = await read(a, {}, assignAll(a, count), { stop: (g) => g.length >= a.records });
  checkOrder(got);
  if (got.length < a.records) throw new cli.Failed(`read ${got.length} of ${a.records} records`);
  return { records: got.length };
}

function groupConf(a) {
  const conf = { 'group.id': a.group, 'group.protocol': a.groupProtocol };
  if (a.groupProtocol === 'classic') conf['session.timeout.ms'] = 10000;
  return conf;
}

async function opConsumeGroup(a) {
  const { got } = await read(a, groupConf(a), (c) => c.subscribe([a.topic]), { stop: (g) => g.length >= a.records });
  checkOrder(got);
  if (got.length < a.records) throw new cli.Failed(`read ${got.length} of ${a.records} records`);
  return { records: got.length };
}

async function opOffsets(a) {
  const c = new rdk.KafkaConsumer({ ...base(a), 'group.id': a.group, 'enable.auto.commit': false }, {});
  await connect(a, c);
  try {
    c.commitSync([{ topic: a.topic, partition: 0, offset: 5 }]);
    const got = await cli.bounded(a, call((cb) => c.committed([{ topic: a.topic, partition: 0 }], Math.max(1000, cli.remaining(a, 1000)), cb)), 'committed');
    if (!got.length || got[0].offset !== 5) throw new cli.Failed(`committed offset 5, fetched ${JSON.stringify(got)}`);
    return { records: 0 };
  } finally {
    await disconnect(a, c);
  }
}

async function opLargeRecord(a) {
  const size = Math.max(a.recordSize, 1024 * 1024);
  const p = await producer(a, { 'message.max.bytes': LARGE });
  let r;
  try {
    r = await produceAll(a, p, 1, { size });
  } finally {
    await disconnect(a, p);
  }
  if (r.error || r.acked !== 1) throw new cli.Failed(`produce of a ${size}-byte record: ${r.error || 'not acknowledged'}`);
  const [partition, offset] = r.where[0];
  const { got } = await read(a, { 'fetch.max.bytes': LARGE, 'max.partition.fetch.bytes': LARGE, 'receive.message.max.bytes': LARGE + 65536 },
    (c) => c.assign([{ topic: a.topic, partition, offset }]), { stop: (g) => g.length >= 1 });
  if (!got.length || got[0].value.toString() !== cli.value(0, size)) {
    throw new cli.Failed(`read back ${got.length ? `${got[0].value.length} different bytes` : 'nothing'}`);
  }
  return { records: 1 };
}

async function opManyPartitions(a) {
  const count = await partitionCount(a);
  // Idempotent: librdkafka retries a ProduceRequest that timed out on a
  // loaded machine, and without idempotence the broker stores it twice.
  const p = await producer(a, { 'enable.idempotence': true });
  let r;
  try {
    r = await produceAll(a, p, count, { partitionOf: (i) => i });
  } finally {
    await disconnect(a, p);
  }
  if (r.error || r.acked !== count) throw new cli.Failed(`${r.acked} of ${count} acknowledged: ${r.error}`);
  const { got } = await read(a, {}, assignAll(a, count), { stop: (g) => g.length >= count });
  const seen = new Set(got.map((m) => m.partition));
  if (got.length !== count || seen.size !== count) throw new cli.Failed(`read ${got.length} records from ${seen.size} of ${count} partitions`);
  return { records: got.length, partitions: count };
}

async function opAdmin(a) {
  const name = `${a.topic}-admin`;
  const ad = rdk.AdminClient.create(base(a));
  const t = () => Math.max(1000, cli.remaining(a, 2000));
  try {
    await cli.bounded(a, call((cb) => ad.createTopic({ topic: name, num_partitions: 3, replication_factor: -1 }, t(), cb)), 'createTopic');
    let described = null;
    while (!cli.expired(a)) {
      try {
        described = await call((cb) => ad.describeTopics([name], { timeout: t() }, cb));
        if (described[0] && described[0].partitions.length === 3) break;
      } catch (e) {
        console.error('describeTopics:', e.message);
      }
      await cli.sleep(200);
    }
    if (!described || !described[0] || described[0].partitions.length !== 3) throw new cli.Failed(`describe of the new topic: ${JSON.stringify(described)}`);
    // Any broker may answer; one that has not applied the create yet lists
    // without the topic, so ask again within the bound.
    while (!(await cli.bounded(a, call((cb) => ad.listTopics({ timeout: t() }, cb)), 'listTopics')).includes(name)) {
      if (cli.expired(a)) throw new cli.Failed(`listTopics lacks ${name}`);
      await cli.sleep(100);
    }
    await cli.bounded(a, call((cb) => ad.deleteTopic(name, t(), cb)), 'deleteTopic');
  } finally {
    ad.disconnect();
  }
  // The AdminClient has no describeCluster; the brokers come from Metadata.
  const p = await producer(a);
  try {
    const md = await metadata(a, p, null);
    return { records: 0, brokers: md.brokers.map((b) => [b.host, b.port]).sort() };
  } finally {
    await disconnect(a, p);
  }
}

async function opProduceMove(a) {
  const log = new cli.MoveLog(a);
  a.acks = 'all';
  const p = await producer(a, { 'enable.idempotence': true });
  try {
    const { acked, error } = await produceAll(a, p, a.records, { onAck: (partition, offset, i) => log.event(partition, offset, i) });
    if (error || acked !== a.records) throw new cli.Failed(`${acked} of ${a.records} acknowledged: ${error}`);
    return { records: acked, max_gap_ms: Math.round(log.maxGapMs * 10) / 10 };
  } finally {
    log.close();
    await disconnect(a, p);
  }
}

async function opConsumeMove(a) {
  const log = new cli.MoveLog(a);
  const seen = new Set();
  await read(a, groupConf(a), (c) => c.subscribe([a.topic]), {
    stop: () => seen.size >= a.records,
    onMessage: (m) => {
      log.event(m.partition, m.offset, cli.indexOf(m.value));
      seen.add(cli.indexOf(m.value));
    },
  });
  log.close();
  if (seen.size < a.records) throw new cli.Failed(`read ${seen.size} of ${a.records} distinct records`);
  return { records: log.count, max_gap_ms: Math.round(log.maxGapMs * 10) / 10 };
}

cli.run(CLIENT, VERSION, {
  metadata: opMetadata, produce: (a) => produceOp(a), 'produce-idempotent': opProduceIdempotent,
  transactions: opTransactions, 'consume-assign': opConsumeAssign, 'consume-group': opConsumeGroup,
  offsets: opOffsets, 'large-record': opLargeRecord, 'many-partitions': opManyPartitions, admin: opAdmin,
  'produce-move': opProduceMove, 'consume-move': opConsumeMove,
}, UNSUPPORTED);
