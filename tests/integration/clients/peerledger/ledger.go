// Package peerledger is the bookkeeping the Go client peers (sarama,
// kafka-go) share: the record keys and values a run writes, the tally of what
// was acknowledged and what came back, the stdin/stdout handshake with the
// test, and the one JSON summary line each run ends with.
//
// It owns no Kafka client code and must never decide pass or fail for the
// test beyond the "passed" field of the summary: the Python test reads the
// counts and checks the cluster's own view as well. The same line protocol
// is spoken by clients/kafkajs/peer.js.
package peerledger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Options are the command-line flags every client peer takes.
type Options struct {
	Bootstrap  string
	Topic      string
	Group      string
	Messages   int
	Acks       string // "1" or "all"
	Idempotent bool
	Pause      bool    // stop at each MARK until the test writes a line on stdin
	Timeout    float64 // seconds for the whole run
	Run        string  // value prefix, so records of other runs are told apart
	Mode       string  // "roundtrip" (default) or a peer-specific mode
	Partitions int     // expected partition count (for modes that need it)
}

// ParseOptions reads the shared flags from os.Args.
func ParseOptions() *Options {
	o := &Options{}
	flag.StringVar(&o.Bootstrap, "bootstrap", "", "comma-separated host:port list")
	flag.StringVar(&o.Topic, "topic", "", "topic to produce to and consume from")
	flag.StringVar(&o.Group, "group", "", "consumer group id")
	flag.IntVar(&o.Messages, "messages", 200, "records to produce")
	flag.StringVar(&o.Acks, "acks", "all", "1 or all")
	flag.BoolVar(&o.Idempotent, "idempotent", false, "idempotent producer")
	flag.BoolVar(&o.Pause, "pause", false, "wait for a stdin line at each MARK")
	flag.Float64Var(&o.Timeout, "timeout", 40, "deadline of the whole run (s)")
	flag.StringVar(&o.Run, "run", "", "run id used as the value prefix")
	flag.StringVar(&o.Mode, "mode", "roundtrip", "what to do")
	flag.IntVar(&o.Partitions, "partitions", 0, "partition count the topic has")
	flag.Parse()
	if o.Bootstrap == "" || o.Topic == "" || o.Run == "" {
		fmt.Fprintln(os.Stderr, "usage: --bootstrap B --topic T --run ID [--group G] [--messages N] [--acks 1|all] [--idempotent] [--pause]")
		os.Exit(2)
	}
	if o.Group == "" {
		o.Group = "peer-" + o.Run
	}
	return o
}

// Key of record `seq`: seven keys so the default partitioners spread them.
func Key(seq int) []byte { return []byte("k" + strconv.Itoa(seq%7)) }

// Value of record `seq` of run `run`: "run:seq:" and some padding.
func Value(run string, seq int) []byte {
	return append([]byte(run+":"+strconv.Itoa(seq)+":"), bytes.Repeat([]byte("v"), seq%50)...)
}

// Seq returns the sequence number of a value written by Value for `run`, or
// false for anything else.
func Seq(run string, value []byte) (int, bool) {
	prefix := []byte(run + ":")
	if !bytes.HasPrefix(value, prefix) {
		return 0, false
	}
	rest := value[len(prefix):]
	end := bytes.IndexByte(rest, ':')
	if end < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(string(rest[:end]))
	return n, err == nil
}

// Ledger counts what one run produced, had acknowledged and consumed.
// Safe for concurrent use.
type Ledger struct {
	mu         sync.Mutex
	run        string
	produced   int
	acked      map[int]int32 // seq -> partition the broker acknowledged it on
	failed     int
	seen       map[int]int32
	consumed   int // every delivery, duplicates included
	duplicates int
	outOfOrder int
	misplaced  int
	unknown    int
	last       map[int32]int
	committed  int // records whose offsets the client asked to commit
	errors     []string
	fields     map[string]interface{}
	started    time.Time
}

// New starts a ledger for run `run`.
func New(run string) *Ledger {
	return &Ledger{run: run, acked: map[int]int32{}, seen: map[int]int32{},
		last: map[int32]int{}, fields: map[string]interface{}{}, started: time.Now()}
}

// Produced counts one record handed to the client.
func (l *Ledger) Produced() { l.mu.Lock(); l.produced++; l.mu.Unlock() }

// Acked records that the broker acknowledged `seq` on `partition`.
func (l *Ledger) Acked(seq int, partition int32) {
	l.mu.Lock()
	l.acked[seq] = partition
	l.mu.Unlock()
}

// Failed counts a record the client reported as not delivered.
func (l *Ledger) Failed(err error) {
	l.mu.Lock()
	l.failed++
	l.mu.Unlock()
	l.Error("produce", err)
}

// AckedCount is the number of distinct acknowledged records.
func (l *Ledger) AckedCount() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.acked) }

// Consumed records one delivery of `value` from `partition`; returns the
// number of distinct records of this run seen so far.
func (l *Ledger) Consumed(value []byte, partition int32) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq, ok := Seq(l.run, value)
	if !ok {
		l.unknown++
		return len(l.seen)
	}
	l.consumed++
	if _, dup := l.seen[seq]; dup {
		l.duplicates++
		return len(l.seen)
	}
	l.seen[seq] = partition
	if p, ok := l.acked[seq]; ok && p != partition {
		l.misplaced++
	}
	if last, ok := l.last[partition]; ok && seq < last {
		l.outOfOrder++
	} else {
		l.last[partition] = seq
	}
	return len(l.seen)
}

// SeenCount is the number of distinct records of this run consumed.
func (l *Ledger) SeenCount() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.seen) }

// SeenAllAcked is true once every acknowledged record came back.
func (l *Ledger) SeenAllAcked() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.acked {
		if _, ok := l.seen[s]; !ok {
			return false
		}
	}
	return len(l.acked) > 0
}

// Committed counts records whose offsets were committed.
func (l *Ledger) Committed(n int) { l.mu.Lock(); l.committed += n; l.mu.Unlock() }

// Error keeps the first few errors, each with where it came from.
func (l *Ledger) Error(where string, err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errors) < 8 {
		l.errors = append(l.errors, where+": "+err.Error())
	}
}

// Set adds a field to the summary (client version, config, figures).
func (l *Ledger) Set(name string, value interface{}) {
	l.mu.Lock()
	l.fields[name] = value
	l.mu.Unlock()
}

// Summary is the JSON object the run prints last. "passed" is true when
// every produced record was acknowledged and came back exactly once, on the
// partition it was acknowledged on. Order is reported, not judged here: only
// an idempotent producer promises it across retries, and the test knows
// which one ran.
func (l *Ledger) Summary(expected int) map[string]interface{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	missing := 0
	for s := range l.acked {
		if _, ok := l.seen[s]; !ok {
			missing++
		}
	}
	parts := map[int32]bool{}
	for _, p := range l.acked {
		parts[p] = true
	}
	partitions := []int{}
	for p := range parts {
		partitions = append(partitions, int(p))
	}
	sort.Ints(partitions)
	out := map[string]interface{}{}
	for k, v := range l.fields {
		out[k] = v
	}
	out["produced"] = l.produced
	out["acked"] = len(l.acked)
	out["failed"] = l.failed
	out["consumed"] = l.consumed
	out["unique"] = len(l.seen)
	out["missing"] = missing
	out["duplicates"] = l.duplicates
	out["out_of_order"] = l.outOfOrder
	out["misplaced"] = l.misplaced
	out["foreign"] = l.unknown
	out["committed_records"] = l.committed
	out["partitions"] = partitions
	out["errors"] = l.errors
	out["seconds"] = time.Since(l.started).Seconds()
	out["passed"] = l.produced == expected && len(l.acked) == expected && l.failed == 0 &&
		len(l.seen) == expected && l.consumed == expected && missing == 0 &&
		l.misplaced == 0
	return out
}

// Print writes the summary as one JSON line on stdout.
func (l *Ledger) Print(expected int) {
	line, _ := json.Marshal(l.Summary(expected))
	fmt.Println(string(line))
}

var stdin = bufio.NewReader(os.Stdin)
var stdoutMu sync.Mutex

// Mark prints "MARK name" and, with `pause`, blocks until the test writes a
// line on stdin or `wait` passes. Returns false if it timed out.
func Mark(name string, pause bool, wait time.Duration) bool {
	stdoutMu.Lock()
	fmt.Println("MARK " + name)
	os.Stdout.Sync()
	stdoutMu.Unlock()
	if !pause {
		return true
	}
	got := make(chan struct{})
	go func() {
		_, _ = stdin.ReadString('\n')
		close(got)
	}()
	select {
	case <-got:
		return true
	case <-time.After(wait):
		return false
	}
}

// WaitFor polls `cond` every 20 ms until it holds or `deadline` passes.
func WaitFor(cond func() bool, deadline time.Time) bool {
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
