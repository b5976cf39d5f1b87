// tests/integration/clients/kafkagodial: the kafka-go (Debian 0.2.1) client as a test
// peer: dials a broker the way kafka-go does (a dial deadline, then no
// deadline on the connection) and reads partitions of one topic. Prints one
// JSON line: {"dial_ms":..,"dial_error":"..","read_ms":..,"read_error":"..","partitions":N}.
// Used by tests/faults/test_upstream_dialer.py (built by ../build.sh) to show what a client without read
// deadlines sees through epochgate and directly. Never retries, never sets a
// read deadline of its own (that is the behaviour under test).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

type result struct {
	DialMs     int64  `json:"dial_ms"`
	DialError  string `json:"dial_error"`
	ReadMs     int64  `json:"read_ms"`
	ReadError  string `json:"read_error"`
	Partitions int    `json:"partitions"`
}

func main() {
	addr := flag.String("broker", "", "host:port")
	topic := flag.String("topic", "", "topic to read partitions of")
	dialTimeout := flag.Duration("dial-timeout", 10*time.Second, "kafka.Dialer Timeout")
	flag.Parse()
	var r result
	d := &kafka.Dialer{Timeout: *dialTimeout}
	start := time.Now()
	conn, err := d.DialContext(context.Background(), "tcp", *addr)
	r.DialMs = time.Since(start).Milliseconds()
	if err != nil {
		r.DialError = err.Error()
	} else {
		start = time.Now()
		parts, err := conn.ReadPartitions(*topic)
		r.ReadMs = time.Since(start).Milliseconds()
		if err != nil {
			r.ReadError = err.Error()
		}
		r.Partitions = len(parts)
		conn.Close()
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
	os.Exit(0)
}
