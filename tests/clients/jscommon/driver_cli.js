// The driver protocol's command line and result line, shared by the
// JavaScript drivers (tests/clients/<client>/driver.js). A driver hands
// `run` its ops; this module parses the options, keeps the overall
// --timeout-ms bound with a watchdog (a library promise that never settles
// still ends the process with a "failed" line), and prints the one JSON
// result line the harness reads. Library logs belong on stderr.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

// Libraries log through console.log/info (stdout); the harness reads the
// last stdout line, so everything but the result goes to stderr.
console.log = console.error;
console.info = console.error;
console.debug = console.error;

const OPS = ['metadata', 'produce', 'produce-idempotent', 'transactions', 'consume-assign',
  'consume-group', 'offsets', 'large-record', 'many-partitions', 'admin',
  'share-consume', 'produce-move', 'consume-move'];

class Failed extends Error {}
class Unsupported extends Error {}

const DEFAULTS = {
  partitions: 0, records: 100, 'record-size': 100, acks: 'all', compression: 'none',
  group: '', 'group-protocol': 'classic', rate: 0, 'transactional-id': '', out: '',
  'timeout-ms': 30000, bootstrap: '', topic: '',
};
const NUMERIC = new Set(['partitions', 'records', 'record-size', 'rate', 'timeout-ms']);

function parse(argv) {
  const a = { ...DEFAULTS };
  const op = argv[0];
  if (!OPS.includes(op)) throw new Error(`unknown op ${op}`);
  for (let i = 1; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, '');
    if (!(name in DEFAULTS) || i + 1 >= argv.length) throw new Error(`bad option ${argv[i]}`);
    a[name] = NUMERIC.has(name) ? Number(argv[i + 1]) : argv[i + 1];
  }
  if (!a.bootstrap || !a.topic) throw new Error('--bootstrap and --topic are required');
  a.op = op;
  a.group = a.group || `g-${a.topic}`;
  a.transactionalId = a['transactional-id'] || `txn-${a.topic}`;
  a.recordSize = a['record-size'];
  a.timeoutMs = a['timeout-ms'];
  a.groupProtocol = a['group-protocol'];
  a.brokers = a.bootstrap.split(',');
  a.started = Date.now();
  a.deadline = a.started + a.timeoutMs;
  return a;
}

// Milliseconds left before the op's bound, less `reserve`.
function remaining(a, reserve = 0) {
  return Math.max(0, a.deadline - Date.now() - reserve);
}

function expired(a) {
  return Date.now() >= a.deadline;
}

const key = (i) => `k${i}`;

// Record i's value: its index (with the op's prefix), padded with 'x'.
function value(i, size, prefix = '') {
  const head = `${prefix}${i}`;
  return head + 'x'.repeat(Math.max(0, size - head.length));
}

// The value index back from a value (prefix letters and padding dropped).
function indexOf(v) {
  const m = /\d+/.exec(v.toString());
  return m ? Number(m[0]) : -1;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Spaces sends to --rate per second (0: no pacing).
class Pacer {
  constructor(rate) {
    this.interval = rate > 0 ? 1000 / rate : 0;
    this.next = Date.now();
  }

  async wait() {
    if (!this.interval) return;
    const delay = this.next - Date.now();
    if (delay > 0) await sleep(delay);
    this.next = Math.max(this.next + this.interval, Date.now() - this.interval);
  }
}

// The *-move ops' --out file ("<partition> <offset> <index> <ms>"), written
// line by line as the events happen (the harness waits for the first one
// before it moves leaders), and the longest gap between consecutive events.
class MoveLog {
  constructor(a) {
    this.start = a.started;
    this.fd = a.out ? fs.openSync(a.out, 'w') : null;
    this.last = null;
    this.maxGapMs = 0;
    this.count = 0;
  }

  event(partition, offset, index) {
    const now = performanceNow();
    if (this.last !== null) this.maxGapMs = Math.max(this.maxGapMs, now - this.last);
    this.last = now;
    this.count += 1;
    if (this.fd !== null) fs.writeSync(this.fd, `${partition} ${offset} ${index} ${(Date.now() - this.start).toFixed(1)}\n`);
  }

  close() {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}

function performanceNow() {
  return Number(process.hrtime.bigint()) / 1e6;
}

// Where tools/clients/fetch-node.sh put a driver's node_modules.
function modules(client) {
  const cache = process.env.EPOCHGATE_CACHE || path.join(os.homedir(), '.cache', 'epochgate');
  return path.join(cache, 'clients', 'node', client, 'node_modules');
}

let printed = false;
function emit(result, code) {
  if (printed) return;
  printed = true;
  // Synchronous: the process exits right after.
  fs.writeSync(1, `${JSON.stringify(result)}\n`);
  process.exit(code);
}

// Runs one op. ops: name -> async fn(a) returning an object (at least
// records); unsupported: name -> reason.
async function run(client, version, ops, unsupported = {}) {
  let a;
  try {
    a = parse(process.argv.slice(2));
  } catch (e) {
    emit({ client, version, op: process.argv[2] || '', status: 'failed', error: e.message, records: 0, elapsed_ms: 0 }, 1);
    return;
  }
  const base = { client, version, op: a.op };
  const elapsed = () => Math.round((Date.now() - a.started) * 10) / 10;
  // A little past the bound: an op that honours its own deadline reports first.
  setTimeout(() => emit({
    ...base, status: 'failed', records: 0, elapsed_ms: elapsed(),
    error: `no result within --timeout-ms ${a.timeoutMs} (the library call did not return)`,
  }, 1), a.timeoutMs + 2000).unref();
  process.on('unhandledRejection', (e) => console.error('unhandled rejection:', e));
  const result = { ...base, status: 'ok', error: '', records: 0 };
  let code = 0;
  try {
    if (unsupported[a.op]) throw new Unsupported(unsupported[a.op]);
    if (!ops[a.op]) throw new Unsupported('not implemented in this driver');
    Object.assign(result, (await ops[a.op](a)) || {});
  } catch (e) {
    if (e instanceof Unsupported) {
      result.status = 'unsupported';
      result.error = e.message;
    } else {
      result.status = 'failed';
      result.error = e instanceof Failed ? e.message : `${e.name || 'Error'}: ${e.message}`;
      code = 1;
    }
  }
  result.elapsed_ms = elapsed();
  emit(result, code);
}

// A promise bounded by the op's deadline (less `reserve` ms).
function bounded(a, promise, what, reserve = 0) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Failed(`${what}: not done within --timeout-ms ${a.timeoutMs}`)),
      Math.max(1, remaining(a, reserve)));
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

// Logs of the library, one JSON line each, on stderr.
function stderrLog(prefix) {
  return (...args) => process.stderr.write(`${prefix} ${args.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(' ')}\n`);
}

module.exports = {
  Failed, Unsupported, parse, remaining, expired, key, value, indexOf, sleep, Pacer, MoveLog,
  modules, run, bounded, stderrLog,
};
