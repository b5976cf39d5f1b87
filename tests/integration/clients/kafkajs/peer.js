// KafkaJS peer: KafkaJS (npm, pure JavaScript; the version build.sh pins)
// as an application uses it, for the integration tests. One run joins a
// consumer group on a topic, produces the run's records in two halves
// (acks 1 or all, idempotent on request), consumes every acknowledged record
// through the group with KafkaJS's auto-commit, and prints one JSON summary
// line, the same one the Go peers print (clients/peerledger). Between the
// halves it prints "MARK half" and, with --pause, waits for a line on stdin
// (the test moves leaders there).
//
// Runs as: node peer.js --modules DIR/node_modules --bootstrap B --topic T
//          --run ID [--group G] [--messages N] [--acks 1|all] [--idempotent]
//          [--pause] [--produce-after-rejoin] [--timeout S]
// It must never run without a deadline and never judge the cluster's view:
// the test checks high watermarks and committed offsets itself.
'use strict';

const path = require('path');
const readline = require('readline');

function parseArgs(argv) {
  const o = { messages: 200, acks: 'all', idempotent: false, pause: false, timeout: 40 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i].replace(/^--/, '');
    if (flag === 'idempotent' || flag === 'pause' || flag === 'produce-after-rejoin') {
      o[flag] = true;
    } else {
      o[flag] = argv[++i];
    }
  }
  o.messages = Number(o.messages);
  o.timeout = Number(o.timeout);
  if (!o.bootstrap || !o.topic || !o.run || !o.modules) {
    process.stderr.write('usage: peer.js --modules DIR --bootstrap B --topic T --run ID ...\n');
    process.exit(2);
  }
  o.group = o.group || 'peer-' + o.run;
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const { Kafka, Partitioners, logLevel } = require(path.join(opts.modules, 'kafkajs'));
const kafkajsVersion = require(path.join(opts.modules, 'kafkajs', 'package.json')).version;

const key = (seq) => Buffer.from('k' + (seq % 7));
const value = (seq) => Buffer.from(opts.run + ':' + seq + ':' + 'v'.repeat(seq % 50));
function seqOf(buf) {
  const text = buf ? buf.toString() : '';
  const prefix = opts.run + ':';
  if (!text.startsWith(prefix)) return null;
  const n = Number(text.slice(prefix.length).split(':', 1)[0]);
  return Number.isInteger(n) ? n : null;
}

// The tally; field names and the "passed" rule match clients/peerledger.
const ledger = {
  produced: 0, acked: new Map(), failed: 0, seen: new Map(), consumed: 0,
  duplicates: 0, outOfOrder: 0, misplaced: 0, foreign: 0, last: new Map(),
  errors: [], logErrors: [], committed: {}, fields: {},
};
const chosen = new Map(); // seq -> partition KafkaJS's partitioner picked

function error(where, e) {
  if (ledger.errors.length < 8) ledger.errors.push(where + ': ' + (e && e.message ? e.message : e));
}

function consumed(buf, partition) {
  const seq = seqOf(buf);
  if (seq === null) { ledger.foreign++; return; }
  ledger.consumed++;
  if (ledger.seen.has(seq)) { ledger.duplicates++; return; }
  ledger.seen.set(seq, partition);
  if (ledger.acked.has(seq) && ledger.acked.get(seq) !== partition) ledger.misplaced++;
  if (ledger.last.has(partition) && seq < ledger.last.get(partition)) ledger.outOfOrder++;
  else ledger.last.set(partition, seq);
}

const seenAllAcked = () => ledger.acked.size > 0 &&
  [...ledger.acked.keys()].every((s) => ledger.seen.has(s));

const started = Date.now();
const deadline = started + opts.timeout * 1000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(cond) {
  while (!cond()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

const stdinLines = [];
let stdinWaiter = null;
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  stdinLines.push(line);
  if (stdinWaiter) stdinWaiter();
});
async function mark(name) {
  process.stdout.write('MARK ' + name + '\n');
  if (!opts.pause) return true;
  const got = new Promise((resolve) => {
    stdinWaiter = resolve;
    if (stdinLines.length) resolve();
  });
  const timer = new Promise((resolve) => setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now())));
  const r = await Promise.race([got, timer]);
  stdinLines.shift();
  return r !== 'timeout';
}

async function produce(producer, from, to) {
  const messages = [];
  for (let i = from; i < to; i++) {
    messages.push({ key: key(i), value: value(i) });
    ledger.produced++;
  }
  try {
    // send() resolves once every record is acknowledged, and rejects with
    // the last error once retries are spent: no way to tell which failed.
    await producer.send({ topic: opts.topic, acks: opts.acks === '1' ? 1 : -1, messages });
    for (let i = from; i < to; i++) ledger.acked.set(i, chosen.get(i));
  } catch (e) {
    ledger.failed += to - from;
    error('produce', e);
  }
}

function summary() {
  const expected = opts.messages;
  const missing = [...ledger.acked.keys()].filter((s) => !ledger.seen.has(s)).length;
  const partitions = [...new Set(ledger.acked.values())].sort((a, b) => a - b);
  return Object.assign({}, ledger.fields, {
    client: 'kafkajs', version: kafkajsVersion,
    produced: ledger.produced, acked: ledger.acked.size, failed: ledger.failed,
    consumed: ledger.consumed, unique: ledger.seen.size, missing,
    duplicates: ledger.duplicates, out_of_order: ledger.outOfOrder,
    misplaced: ledger.misplaced, foreign: ledger.foreign, partitions,
    committed: ledger.committed, errors: ledger.errors.length ? ledger.errors : null,
    log_errors: ledger.logErrors,
    seconds: (Date.now() - started) / 1000,
    passed: ledger.produced === expected && ledger.acked.size === expected &&
      ledger.failed === 0 && ledger.seen.size === expected &&
      ledger.consumed === expected && missing === 0 && ledger.misplaced === 0,
  });
}

// KafkaJS reports some failures only in its log (a response it could not
// parse, for one): its ERROR entries go into the summary, deduplicated, so
// the test can compare them between a direct run and one through epochgate.
const logCreator = () => ({ namespace, level, log }) => {
  process.stderr.write(JSON.stringify(Object.assign({ namespace, level }, log)) + '\n');
  if (level !== logLevel.ERROR) return;
  const text = namespace + ': ' + log.message + (log.error ? ': ' + log.error : '');
  if (!ledger.logErrors.includes(text) && ledger.logErrors.length < 8) ledger.logErrors.push(text);
};

async function main() {
  const kafka = new Kafka({
    clientId: 'epochgate-kafkajs', brokers: opts.bootstrap.split(','),
    logLevel: process.env.KAFKAJS_DEBUG ? logLevel.DEBUG : logLevel.WARN, logCreator,
    connectionTimeout: 5000, requestTimeout: 15000,
    retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 10 },
  });
  // The default partitioner, wrapped so the run learns the partition of
  // each record: KafkaJS's send() reports per partition, not per record.
  const createPartitioner = () => {
    const partition = Partitioners.DefaultPartitioner();
    return (args) => {
      const p = partition(args);
      chosen.set(seqOf(args.message.value), p);
      return p;
    };
  };
  const consumer = kafka.consumer({
    groupId: opts.group, heartbeatInterval: 300, sessionTimeout: 3000,
    rebalanceTimeout: 5000, maxWaitTimeInMs: 200,
    retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 10 },
  });
  let joined = false;
  let lastJoinAt = 0;
  ledger.fields.group_joins = 0;
  consumer.on(consumer.events.GROUP_JOIN, () => {
    joined = true;
    ledger.fields.group_joins++;
    lastJoinAt = Date.now();
  });
  consumer.on(consumer.events.COMMIT_OFFSETS, (e) => {
    for (const t of e.payload.topics) {
      for (const p of t.partitions) ledger.committed[p.partition] = Number(p.offset);
    }
  });
  consumer.on(consumer.events.CRASH, (e) => error('consumer crash', e.payload.error));
  const producer = kafka.producer({
    createPartitioner, idempotent: opts.idempotent,
    maxInFlightRequests: opts.idempotent ? 1 : undefined,
    retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 10 },
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [opts.topic], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ partition, message }) => consumed(message.value, partition) });
    ledger.fields.joined = await waitFor(() => joined);
    await producer.connect();
    const half = Math.floor(opts.messages / 2);
    await produce(producer, 0, half);
    await waitFor(seenAllAcked);
    // KafkaJS rejoins its group when a fetch meets a moved leader; offsets
    // not yet committed by then would be delivered again after the rejoin.
    // An application that wants no redelivery waits for its commit first.
    await waitFor(() => Object.values(ledger.committed).reduce((a, b) => a + b, 0) >= half);
    if (!(await mark('half'))) error('mark', 'no go-ahead from the test');
    if (opts['produce-after-rejoin']) {
      // Records fetched while KafkaJS rejoins are committed under the old
      // generation, which fails, and come again after the rejoin. Writing
      // the second half once the group has settled keeps every record to
      // one delivery; the producer still meets the moved leaders.
      await waitFor(() => ledger.fields.group_joins >= 2);
      await waitFor(() => Date.now() - lastJoinAt > 1500);
      ledger.fields.rejoined_before_second_half = ledger.fields.group_joins >= 2;
    }
    await produce(producer, half, opts.messages);
    await waitFor(seenAllAcked);
    await sleep(300); // a record delivered twice arrives soon after
  } catch (e) {
    error('run', e);
  }
  // disconnect() stops the consumer, which commits what it has resolved.
  await producer.disconnect().catch((e) => error('producer disconnect', e));
  await consumer.disconnect().catch((e) => error('consumer disconnect', e));
  process.stdout.write(JSON.stringify(summary()) + '\n');
  process.exit(0);
}

setTimeout(() => {
  error('run', 'deadline passed');
  process.stdout.write(JSON.stringify(summary()) + '\n');
  process.exit(0);
}, opts.timeout * 1000 + 10000).unref();

main();
