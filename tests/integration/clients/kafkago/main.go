// kafka-go peer: Debian's github.com/segmentio/kafka-go (0.2.1) as an
// application uses it, for the integration tests. Modes:
//
//	roundtrip  a group Reader on the topic, a Writer producing the run's
//	           records in two halves (acks 1 or all; kafka-go 0.2.1 has no
//	           idempotent producer), every record fetched and committed with
//	           CommitMessages; "MARK half" between the halves (--pause waits
//	           for the test there); the peerledger summary at the end.
//	seed       one record per partition, written partition by partition.
//	wide-read  one group Reader on a topic with many partitions, reading
//	           until it has the run's --messages records or --timeout
//	           passes: the summary says when the Reader gave its first
//	           answer (a message or an error) and when it had them all, so
//	           the test can compare a direct run with one through epochgate.
//
// It must never run without a deadline and never judge the cluster's view:
// the test checks high watermarks and committed offsets itself.
package main

import (
	"context"
	"errors"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"epochgate/peerledger"
)

// kafkaGoVersion is the Debian package's; kafka-go does not export it.
const kafkaGoVersion = "0.2.1"

func logger() *log.Logger {
	if os.Getenv("KAFKAGO_DEBUG") != "" {
		return log.New(os.Stderr, "kafka-go ", log.Lmicroseconds)
	}
	return nil
}

func errorLogger() *log.Logger { return log.New(os.Stderr, "kafka-go error ", log.Lmicroseconds) }

func reader(o *peerledger.Options) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers: strings.Split(o.Bootstrap, ","), GroupID: o.Group, Topic: o.Topic,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 200 * time.Millisecond,
		HeartbeatInterval: 500 * time.Millisecond, SessionTimeout: 10 * time.Second,
		RebalanceTimeout: 10 * time.Second, CommitInterval: 0, // synchronous commits
		Dialer: &kafka.Dialer{ClientID: "epochgate-kafka-go", Timeout: 5 * time.Second},
		Logger: logger(), ErrorLogger: errorLogger(),
	})
}

// partitionOf is where the Writer's Hash balancer puts `seq`: kafka-go
// 0.2.1 does not report the partition of a written message.
func partitionOf(seq, partitions int) int32 {
	ids := make([]int, partitions)
	for i := range ids {
		ids[i] = i
	}
	return int32((&kafka.Hash{}).Balance(kafka.Message{Key: peerledger.Key(seq)}, ids...))
}

func produce(w *kafka.Writer, o *peerledger.Options, l *peerledger.Ledger, from, to int,
	deadline time.Time) {
	msgs := make([]kafka.Message, 0, to-from)
	for i := from; i < to; i++ {
		msgs = append(msgs, kafka.Message{Key: peerledger.Key(i), Value: peerledger.Value(o.Run, i)})
		l.Produced()
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	// WriteMessages answers for the whole slice: nil means every record was
	// acknowledged; an error leaves no way to tell which were.
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		for range msgs {
			l.Failed(err)
		}
		return
	}
	for i := from; i < to; i++ {
		l.Acked(i, partitionOf(i, o.Partitions))
	}
}

func roundtrip(o *peerledger.Options, l *peerledger.Ledger, deadline time.Time) {
	if o.Partitions <= 0 {
		l.Error("usage", errors.New("--partitions is required"))
		return
	}
	if o.Idempotent {
		l.Error("producer", errors.New("kafka-go 0.2.1 has no idempotent producer"))
		return
	}
	r := reader(o)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var consuming sync.WaitGroup
	consuming.Add(1)
	var committed int
	go func() {
		defer consuming.Done()
		for ctx.Err() == nil {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				if ctx.Err() == nil {
					l.Error("fetch", err)
				}
				continue
			}
			l.Consumed(m.Value, int32(m.Partition))
			if err := r.CommitMessages(ctx, m); err != nil {
				l.Error("commit", err)
			} else {
				committed++
			}
		}
	}()

	acks := -1
	if o.Acks == "1" {
		acks = 1
	}
	w := kafka.NewWriter(kafka.WriterConfig{
		Brokers: strings.Split(o.Bootstrap, ","), Topic: o.Topic, Balancer: &kafka.Hash{},
		RequiredAcks: acks, BatchSize: 100, BatchTimeout: 20 * time.Millisecond,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		Dialer: &kafka.Dialer{ClientID: "epochgate-kafka-go", Timeout: 5 * time.Second},
		Logger: logger(), ErrorLogger: errorLogger(),
	})
	half := o.Messages / 2
	produce(w, o, l, 0, half, deadline)
	peerledger.WaitFor(l.SeenAllAcked, deadline)
	if !peerledger.Mark("half", o.Pause, time.Until(deadline)) {
		l.Error("mark", errors.New("no go-ahead from the test"))
	}
	produce(w, o, l, half, o.Messages, deadline)
	l.Error("writer close", w.Close())
	peerledger.WaitFor(l.SeenAllAcked, deadline)
	time.Sleep(300 * time.Millisecond) // a record delivered twice arrives soon after
	cancel()
	consuming.Wait()
	l.Error("reader close", r.Close())
	l.Committed(committed)
}

// seed writes one record per partition (seq = partition), one partition
// after another over kafka-go's own Conn, so a wide read has data in the
// message format this kafka-go reads, without a dial storm of its own.
func seed(o *peerledger.Options, l *peerledger.Ledger, deadline time.Time) {
	if o.Partitions <= 0 {
		l.Error("usage", errors.New("--partitions is required"))
		return
	}
	brokers := strings.Split(o.Bootstrap, ",")
	d := &kafka.Dialer{ClientID: "epochgate-kafka-go", Timeout: 5 * time.Second}
	for p := 0; p < o.Partitions && time.Now().Before(deadline); p++ {
		l.Produced()
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		conn, err := d.DialLeader(ctx, "tcp", brokers[p%len(brokers)], o.Topic, p)
		cancel()
		if err != nil {
			l.Failed(err)
			continue
		}
		conn.SetRequiredAcks(-1)
		conn.SetDeadline(deadline)
		_, err = conn.WriteMessages(kafka.Message{Key: peerledger.Key(p), Value: peerledger.Value(o.Run, p)})
		conn.Close()
		if err != nil {
			l.Failed(err)
			continue
		}
		l.Acked(p, int32(p))
	}
}

// wideRead is a group Reader on a topic with many partitions, reading
// until it has every record of the run (--messages) or the deadline. It
// reports when the Reader gave its first answer (a message or an error:
// kafka-go retries forever and surfaces errors through FetchMessage) and
// when it had them all, so the test can compare a direct run with one
// through epochgate.
func wideRead(o *peerledger.Options, l *peerledger.Ledger, deadline time.Time) {
	r := reader(o)
	started := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	first, all := -1.0, -1.0
	errs := 0
	for ctx.Err() == nil {
		m, err := r.FetchMessage(ctx)
		if ctx.Err() != nil {
			break
		}
		if first < 0 {
			first = time.Since(started).Seconds()
		}
		if err != nil {
			errs++
			l.Error("fetch", err)
			continue
		}
		if l.Consumed(m.Value, int32(m.Partition)) >= o.Messages {
			all = time.Since(started).Seconds()
			break
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	select {
	case err := <-closed:
		l.Error("reader close", err)
	case <-time.After(10 * time.Second):
		l.Error("reader close", errors.New("Close did not return within 10 s"))
	}
	stats := r.Stats()
	l.Set("first_answer_seconds", first)
	l.Set("all_seconds", all)
	l.Set("fetch_errors", errs)
	l.Set("dials", stats.Dials)
	l.Set("dial_seconds_max", stats.DialTime.Max.Seconds())
	l.Set("reader_errors", stats.Errors)
	l.Set("reader_timeouts", stats.Timeouts)
}

func main() {
	o := peerledger.ParseOptions()
	l := peerledger.New(o.Run)
	l.Set("client", "kafka-go")
	l.Set("version", kafkaGoVersion)
	l.Set("mode", o.Mode)
	deadline := time.Now().Add(time.Duration(o.Timeout * float64(time.Second)))
	defer l.Print(o.Messages)
	switch o.Mode {
	case "roundtrip":
		roundtrip(o, l, deadline)
	case "seed":
		seed(o, l, deadline)
	case "wide-read":
		wideRead(o, l, deadline)
	default:
		l.Error("usage", errors.New("unknown --mode "+o.Mode))
	}
}
