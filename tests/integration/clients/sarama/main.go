// sarama peer: Debian's github.com/Shopify/sarama (1.22) as an application
// uses it, for the integration tests. One run joins a consumer group on a
// topic, produces the run's records in two halves with an AsyncProducer
// (acks 1 or all, idempotent on request), consumes every acknowledged record
// through the group, marks it so sarama's offset manager commits it, and
// prints the peerledger summary. Between the halves it prints "MARK half"
// and, with --pause, waits for the test (which moves leaders there).
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
	"sync/atomic"
	"time"

	"github.com/Shopify/sarama"

	"epochgate/peerledger"
)

// saramaVersion is the Debian package's; sarama 1.22 does not export it.
const saramaVersion = "1.22.1"

type handler struct {
	ledger   *peerledger.Ledger
	assigned int32
	marked   int64
}

func (h *handler) Setup(s sarama.ConsumerGroupSession) error {
	n := 0
	for _, parts := range s.Claims() {
		n += len(parts)
	}
	atomic.StoreInt32(&h.assigned, int32(n))
	return nil
}

func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.ledger.Consumed(m.Value, m.Partition)
		// The offset manager commits marked offsets every CommitInterval
		// and once more when the group is closed.
		s.MarkMessage(m, "")
		atomic.AddInt64(&h.marked, 1)
	}
	return nil
}

func config(o *peerledger.Options) *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "epochgate-sarama"
	c.Version = sarama.V2_0_0_0
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Producer.Retry.Max = 10
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Timeout = 10 * time.Second
	if o.Acks == "1" {
		c.Producer.RequiredAcks = sarama.WaitForLocal
	} else {
		c.Producer.RequiredAcks = sarama.WaitForAll
	}
	if o.Idempotent {
		c.Producer.Idempotent = true
		c.Net.MaxOpenRequests = 1 // sarama refuses idempotence otherwise
	}
	c.Consumer.Return.Errors = true
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.CommitInterval = 200 * time.Millisecond
	c.Consumer.Retry.Backoff = 100 * time.Millisecond
	c.Consumer.Group.Rebalance.Retry.Backoff = 200 * time.Millisecond
	return c
}

// produce sends records [from, to) and waits for every answer.
func produce(p sarama.AsyncProducer, o *peerledger.Options, l *peerledger.Ledger,
	from, to int, deadline time.Time) {
	var wg sync.WaitGroup
	wg.Add(1)
	want := to - from
	go func() {
		defer wg.Done()
		internal := 0
		for got := 0; got < want; {
			select {
			case m := <-p.Successes():
				seq, ours := m.Metadata.(int)
				if !ours {
					// sarama 1.22 (Debian's) can hand back its own retry
					// marker, a message without Metadata, when the marker
					// reaches a broker producer that is no longer retrying
					// its partition after a leader move. It is not a record
					// this run produced: count it apart, never as an ack.
					internal++
					l.Set("sarama_internal_returned", internal)
					continue
				}
				l.Acked(seq, m.Partition)
			case e := <-p.Errors():
				if e.Msg != nil {
					if _, ours := e.Msg.Metadata.(int); !ours {
						internal++
						l.Set("sarama_internal_returned", internal)
						continue
					}
				}
				l.Failed(e.Err)
			case <-time.After(time.Until(deadline)):
				l.Error("produce", errors.New("deadline passed waiting for acks"))
				return
			}
			got++
		}
	}()
	for i := from; i < to; i++ {
		p.Input() <- &sarama.ProducerMessage{Topic: o.Topic, Key: sarama.ByteEncoder(peerledger.Key(i)),
			Value: sarama.ByteEncoder(peerledger.Value(o.Run, i)), Metadata: i}
		l.Produced()
	}
	wg.Wait()
}

func main() {
	o := peerledger.ParseOptions()
	if os.Getenv("SARAMA_DEBUG") != "" {
		sarama.Logger = log.New(os.Stderr, "sarama ", log.Lmicroseconds)
	}
	l := peerledger.New(o.Run)
	l.Set("client", "sarama")
	l.Set("version", saramaVersion)
	deadline := time.Now().Add(time.Duration(o.Timeout * float64(time.Second)))
	brokers := strings.Split(o.Bootstrap, ",")
	defer l.Print(o.Messages)

	group, err := sarama.NewConsumerGroup(brokers, o.Group, config(o))
	if err != nil {
		l.Error("consumer group", err)
		return
	}
	h := &handler{ledger: l}
	ctx, cancel := context.WithCancel(context.Background())
	var consuming sync.WaitGroup
	consuming.Add(2)
	go func() {
		defer consuming.Done()
		for ctx.Err() == nil && time.Now().Before(deadline) {
			if err := group.Consume(ctx, []string{o.Topic}, h); err != nil {
				l.Error("consume", err)
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	go func() {
		defer consuming.Done()
		for {
			select {
			case err, ok := <-group.Errors():
				if !ok {
					return
				}
				l.Error("consumer", err)
			case <-ctx.Done():
				return
			}
		}
	}()
	joined := peerledger.WaitFor(func() bool { return atomic.LoadInt32(&h.assigned) > 0 }, deadline)
	l.Set("joined", joined)

	producer, err := sarama.NewAsyncProducer(brokers, config(o))
	if err != nil {
		l.Error("producer", err)
	} else {
		half := o.Messages / 2
		produce(producer, o, l, 0, half, deadline)
		peerledger.WaitFor(l.SeenAllAcked, deadline)
		if !peerledger.Mark("half", o.Pause, time.Until(deadline)) {
			l.Error("mark", errors.New("no go-ahead from the test"))
		}
		produce(producer, o, l, half, o.Messages, deadline)
		l.Error("producer close", producer.Close())
	}
	peerledger.WaitFor(l.SeenAllAcked, deadline)
	// Anything delivered twice arrives soon after the last new record.
	time.Sleep(300 * time.Millisecond)
	l.Set("marked", atomic.LoadInt64(&h.marked))
	cancel()
	// Close leaves the group and flushes the offset manager's last commit.
	l.Error("group close", group.Close())
	consuming.Wait()
	l.Committed(int(atomic.LoadInt64(&h.marked)))
}
