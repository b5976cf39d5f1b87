// Package driver holds what the three Go client drivers share: the option
// parsing of the driver protocol (tests/clients/README.md), record values,
// the --out timeline and the one-line JSON result. It knows no client
// library, so each driver's file shows only how that library does an op.
package driver

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options are the protocol's flags; drivers ignore the ones an op does not use.
type Options struct {
	Op, Bootstrap, Topic, Acks, Compression, Group, GroupProtocol string
	TransactionalID, Out                                          string
	Partitions, Records, RecordSize, Rate, TimeoutMs              int
}

// Result is the JSON object on the last stdout line.
type Result struct {
	Client     string         `json:"client"`
	Version    string         `json:"version"`
	Op         string         `json:"op"`
	Status     string         `json:"status"`
	Error      string         `json:"error,omitempty"`
	Records    int            `json:"records"`
	ElapsedMs  float64        `json:"elapsed_ms"`
	Brokers    [][]any        `json:"brokers,omitempty"`
	Partitions int            `json:"partitions,omitempty"`
	MaxGapMs   float64        `json:"max_gap_ms,omitempty"`
	Extra      map[string]any `json:"extra,omitempty"`
}

// Parse reads argv (op first, then flags).
func Parse() Options {
	var o Options
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: driver OP --bootstrap HOST:PORT --topic NAME [options]")
		os.Exit(2)
	}
	o.Op = os.Args[1]
	fs := flag.NewFlagSet(o.Op, flag.ExitOnError)
	fs.StringVar(&o.Bootstrap, "bootstrap", "127.0.0.1:9092", "")
	fs.StringVar(&o.Topic, "topic", "", "")
	fs.IntVar(&o.Partitions, "partitions", 3, "")
	fs.IntVar(&o.Records, "records", 100, "")
	fs.IntVar(&o.RecordSize, "record-size", 100, "")
	fs.StringVar(&o.Acks, "acks", "all", "")
	fs.StringVar(&o.Compression, "compression", "none", "")
	fs.StringVar(&o.Group, "group", "", "")
	fs.StringVar(&o.GroupProtocol, "group-protocol", "classic", "")
	fs.IntVar(&o.Rate, "rate", 0, "")
	fs.StringVar(&o.TransactionalID, "transactional-id", "", "")
	fs.StringVar(&o.Out, "out", "", "")
	fs.IntVar(&o.TimeoutMs, "timeout-ms", 30000, "")
	fs.Parse(os.Args[2:])
	if o.Group == "" {
		o.Group = "g-" + o.Topic
	}
	return o
}

// Seeds is --bootstrap split at commas (a cluster's list, or epochgate's one address).
func (o Options) Seeds() []string { return strings.Split(o.Bootstrap, ",") }

// Context is bounded by --timeout-ms, a little short of it so the result
// line is still printed before the harness gives up.
func (o Options) Context() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Duration(o.TimeoutMs*9/10)*time.Millisecond)
}

// Key and Value of record i.
func Key(i int) []byte { return []byte("k" + strconv.Itoa(i)) }

func Value(prefix string, i, size int) []byte {
	s := prefix + strconv.Itoa(i)
	if len(s) < size {
		s += strings.Repeat("x", size-len(s))
	}
	return []byte(s)
}

// Index of a value written by Value (-1 when it is not one).
func Index(prefix string, v []byte) int {
	s := string(v)
	if !strings.HasPrefix(s, prefix) {
		return -1
	}
	s = strings.TrimRight(s[len(prefix):], "x")
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// Pacer spaces sends to --rate per second.
type Pacer struct {
	start time.Time
	rate  int
}

func NewPacer(rate int) *Pacer { return &Pacer{time.Now(), rate} }

func (p *Pacer) Wait(i int) {
	if p.rate <= 0 {
		return
	}
	due := p.start.Add(time.Duration(i) * time.Second / time.Duration(p.rate))
	if d := time.Until(due); d > 0 {
		time.Sleep(d)
	}
}

// Timeline writes the --out lines as the events happen (the harness waits
// for the first one before it moves leaders) and tracks the longest gap
// between events.
type Timeline struct {
	mu    sync.Mutex
	start time.Time
	last  time.Time
	gap   time.Duration
	count int
	out   *os.File
	err   error
}

// NewTimeline starts the clock; path "" keeps no file.
func NewTimeline(path string) *Timeline {
	t := &Timeline{start: time.Now()}
	if path != "" {
		t.out, t.err = os.Create(path)
	}
	return t
}

func (t *Timeline) Add(partition int32, offset int64, index int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if !t.last.IsZero() && now.Sub(t.last) > t.gap {
		t.gap = now.Sub(t.last)
	}
	t.last = now
	t.count++
	if t.out != nil && t.err == nil {
		_, t.err = fmt.Fprintf(t.out, "%d %d %d %.1f\n", partition, offset, index,
			float64(now.Sub(t.start).Microseconds())/1000)
	}
}

func (t *Timeline) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

func (t *Timeline) MaxGapMs() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return float64(t.gap.Microseconds()) / 1000
}

// Close closes the --out file; it returns the first write error.
func (t *Timeline) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.out != nil {
		if err := t.out.Close(); t.err == nil {
			t.err = err
		}
		t.out = nil
	}
	return t.err
}

// OffsetChecker fails when a partition's offsets do not increase.
type OffsetChecker struct{ last map[int32]int64 }

func NewOffsetChecker() *OffsetChecker { return &OffsetChecker{map[int32]int64{}} }

func (c *OffsetChecker) See(p int32, off int64) error {
	if prev, ok := c.last[p]; ok && off <= prev {
		return fmt.Errorf("partition %d: offset %d after %d", p, off, prev)
	}
	c.last[p] = off
	return nil
}

// Emit prints the result line and exits with the protocol's code.
var emitted sync.Mutex

func Emit(r Result, started time.Time) {
	emitted.Lock() // never unlocked: one result line, then exit
	r.ElapsedMs = float64(time.Since(started).Microseconds()) / 1000
	if r.Status == "" {
		r.Status = "ok"
	}
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	if r.Status == "failed" {
		os.Exit(1)
	}
	os.Exit(0)
}

// Run calls fn and turns its error or panic into a failed result.
func Run(client, version string, fn func(o Options, r *Result) error) {
	o := Parse()
	started := time.Now()
	r := Result{Client: client, Version: version, Op: o.Op}
	// A client call that ignores its context (a Close waiting on a broker)
	// must not keep the process past --timeout-ms.
	time.AfterFunc(time.Duration(o.TimeoutMs)*time.Millisecond, func() {
		Emit(Result{Client: client, Version: version, Op: o.Op, Status: "failed",
			Error: fmt.Sprintf("still running after --timeout-ms %d", o.TimeoutMs)}, started)
	})
	defer func() {
		if p := recover(); p != nil {
			r.Status, r.Error = "failed", fmt.Sprint("panic: ", p)
			Emit(r, started)
		}
	}()
	if err := fn(o, &r); err != nil {
		if u, ok := err.(Unsupported); ok {
			r.Status, r.Error = "unsupported", string(u)
		} else {
			r.Status, r.Error = "failed", err.Error()
		}
	}
	Emit(r, started)
}

// Unsupported is returned for an op the client cannot do, with the reason.
type Unsupported string

func (u Unsupported) Error() string { return string(u) }
