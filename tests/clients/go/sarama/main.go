// The sarama driver (IBM sarama v1.61.1) of the client matrix; ops and
// output as tests/clients/README.md describes.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"epochgate.local/clients/driver"
	"github.com/IBM/sarama"
)

const version = "1.61.1"

func main() {
	if os.Getenv("EG_DRIVER_DEBUG") != "" {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	}
	driver.Run("sarama", version, func(o driver.Options, r *driver.Result) error {
		ctx, cancel := o.Context()
		defer cancel()
		switch o.Op {
		case "metadata":
			return metadata(o, r)
		case "produce":
			return produce(ctx, o, r, false, nil)
		case "produce-idempotent":
			o.Acks = "all"
			return produce(ctx, o, r, true, nil)
		case "transactions":
			return transactions(ctx, o, r)
		case "consume-assign":
			return assign(ctx, o, r)
		case "consume-group":
			return group(ctx, o, r, nil)
		case "offsets":
			return offsets(o, r)
		case "large-record":
			o.Records = 1
			if err := produce(ctx, o, r, true, nil); err != nil {
				return err
			}
			return assign(ctx, o, r)
		case "many-partitions":
			o.Records = o.Partitions
			if err := produce(ctx, o, r, true, nil); err != nil {
				return err
			}
			return assign(ctx, o, r)
		case "admin":
			return admin(o, r)
		case "share-consume":
			return driver.Unsupported("sarama 1.61 has no share consumer (KIP-932)")
		case "produce-move":
			o.Acks = "all"
			tl := driver.NewTimeline(o.Out)
			err := produce(ctx, o, r, true, tl)
			r.MaxGapMs = tl.MaxGapMs()
			if werr := tl.Close(); err == nil {
				err = werr
			}
			return err
		case "consume-move":
			tl := driver.NewTimeline(o.Out)
			err := group(ctx, o, r, tl)
			r.MaxGapMs = tl.MaxGapMs()
			if werr := tl.Close(); err == nil {
				err = werr
			}
			return err
		}
		return driver.Unsupported("unknown op " + o.Op)
	})
}

func config(o driver.Options) *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "eg-matrix-sarama"
	c.Version = sarama.V4_0_0_0
	c.Metadata.RefreshFrequency = 10 * time.Second
	c.Producer.Return.Successes = true
	c.Producer.MaxMessageBytes = 4 << 20
	c.Producer.Flush.Frequency = 5 * time.Millisecond
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Return.Errors = true
	switch o.Acks {
	case "0":
		c.Producer.RequiredAcks = sarama.NoResponse
	case "1":
		c.Producer.RequiredAcks = sarama.WaitForLocal
	default:
		c.Producer.RequiredAcks = sarama.WaitForAll
	}
	codecs := map[string]sarama.CompressionCodec{"gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
		"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD}
	if codec, ok := codecs[o.Compression]; ok {
		c.Producer.Compression = codec
	}
	return c
}

func metadata(o driver.Options, r *driver.Result) error {
	cl, err := sarama.NewClient(o.Seeds(), config(o))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.RefreshMetadata(o.Topic); err != nil {
		return err
	}
	for _, b := range cl.Brokers() {
		host, port := splitAddr(b.Addr())
		r.Brokers = append(r.Brokers, []any{host, port})
	}
	parts, err := cl.Partitions(o.Topic)
	r.Partitions = len(parts)
	return err
}

func splitAddr(a string) (string, int) {
	i := strings.LastIndex(a, ":")
	var port int
	fmt.Sscan(a[i+1:], &port)
	return a[:i], port
}

// produce sends --records (one per partition with --partitions for
// many-partitions) through an AsyncProducer and counts the acks.
func produce(ctx context.Context, o driver.Options, r *driver.Result, idempotent bool, tl *driver.Timeline) error {
	c := config(o)
	if idempotent {
		c.Producer.Idempotent = true
		c.Net.MaxOpenRequests = 1
	}
	if o.Op == "many-partitions" {
		c.Producer.Partitioner = sarama.NewManualPartitioner
	}
	p, err := sarama.NewAsyncProducer(o.Seeds(), c)
	if err != nil {
		return err
	}
	var firstErr error
	var wg sync.WaitGroup
	wg.Add(1)
	acked := 0
	go func() {
		defer wg.Done()
		for acked < o.Records {
			select {
			case m := <-p.Successes():
				acked++
				if tl != nil {
					tl.Add(m.Partition, m.Offset, m.Metadata.(int))
				}
			case e := <-p.Errors():
				acked++ // counted as answered; firstErr fails the op
				if firstErr == nil {
					firstErr = e.Err
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	pace := driver.NewPacer(o.Rate)
	for i := 0; i < o.Records; i++ {
		pace.Wait(i)
		m := &sarama.ProducerMessage{Topic: o.Topic, Key: sarama.ByteEncoder(driver.Key(i)),
			Value: sarama.ByteEncoder(driver.Value("", i, o.RecordSize)), Metadata: i, Partition: int32(i)}
		select {
		case p.Input() <- m:
		case <-ctx.Done():
		}
	}
	wg.Wait()
	p.AsyncClose()
	for range p.Successes() {
	}
	if firstErr != nil {
		return firstErr
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%d of %d acked: %v", acked, o.Records, ctx.Err())
	}
	r.Records = acked
	return nil
}

func transactions(ctx context.Context, o driver.Options, r *driver.Result) error {
	c := config(o)
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Transaction.ID = o.TransactionalID
	if c.Producer.Transaction.ID == "" {
		c.Producer.Transaction.ID = "tx-" + o.Topic
	}
	p, err := sarama.NewSyncProducer(o.Seeds(), c)
	if err != nil {
		return err
	}
	defer p.Close()
	for _, prefix := range []string{"c", "a"} {
		if err := p.BeginTxn(); err != nil {
			return err
		}
		var msgs []*sarama.ProducerMessage
		for i := 0; i < o.Records; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: o.Topic, Key: sarama.ByteEncoder(driver.Key(i)),
				Value: sarama.ByteEncoder(driver.Value(prefix, i, o.RecordSize))})
		}
		if err := p.SendMessages(msgs); err != nil {
			return err
		}
		if prefix == "c" {
			err = p.CommitTxn()
		} else {
			err = p.AbortTxn()
		}
		if err != nil {
			return fmt.Errorf("end transaction (%s): %w", prefix, err)
		}
	}
	rc := config(o)
	rc.Consumer.IsolationLevel = sarama.ReadCommitted
	committed, aborted := 0, 0
	err = readAll(ctx, o, rc, func(m *sarama.ConsumerMessage) bool {
		if driver.Index("c", m.Value) >= 0 {
			committed++
		} else {
			aborted++
		}
		return committed >= o.Records
	}, time.Second)
	r.Records = committed
	if err != nil {
		return err
	}
	if committed != o.Records || aborted != 0 {
		return fmt.Errorf("read_committed saw %d committed (want %d) and %d aborted", committed, o.Records, aborted)
	}
	return nil
}

// readAll reads every partition from the oldest offset until done says
// so, then `linger` more (to catch records that must not come).
func readAll(ctx context.Context, o driver.Options, c *sarama.Config, done func(*sarama.ConsumerMessage) bool, linger time.Duration) error {
	c.Consumer.Fetch.Max = 8 << 20
	c.Consumer.MaxWaitTime = 100 * time.Millisecond
	cons, err := sarama.NewConsumer(o.Seeds(), c)
	if err != nil {
		return err
	}
	defer cons.Close()
	parts, err := cons.Partitions(o.Topic)
	if err != nil {
		return err
	}
	msgs := make(chan *sarama.ConsumerMessage)
	errs := make(chan error, len(parts))
	stop := make(chan struct{})
	defer close(stop)
	// ConsumePartition looks up the partition's offsets on the connection
	// the running fetches long-poll on, so one at a time 200 partitions take
	// 200 fetch waits: start them all at once.
	pcs := make([]sarama.PartitionConsumer, len(parts))
	perr := make([]error, len(parts))
	var started sync.WaitGroup
	for i, p := range parts {
		started.Add(1)
		go func() {
			defer started.Done()
			pcs[i], perr[i] = cons.ConsumePartition(o.Topic, p, sarama.OffsetOldest)
		}()
	}
	started.Wait()
	for i := range parts {
		if perr[i] != nil {
			return perr[i]
		}
	}
	for _, pc := range pcs {
		defer pc.AsyncClose()
		go func() {
			for {
				select {
				case m, ok := <-pc.Messages():
					if !ok {
						return
					}
					select {
					case msgs <- m:
					case <-stop:
						return
					}
				case e, ok := <-pc.Errors():
					if ok {
						errs <- e
					}
				case <-stop:
					return
				}
			}
		}()
	}
	var until <-chan time.Time
	for {
		select {
		case m := <-msgs:
			if done(m) && until == nil {
				if linger == 0 {
					return nil
				}
				until = time.After(linger)
			}
		case e := <-errs:
			return e
		case <-until:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func assign(ctx context.Context, o driver.Options, r *driver.Result) error {
	check := driver.NewOffsetChecker()
	var orderErr error
	r.Records = 0
	err := readAll(ctx, o, config(o), func(m *sarama.ConsumerMessage) bool {
		r.Records++
		if err := check.See(m.Partition, m.Offset); err != nil && orderErr == nil {
			orderErr = err
		}
		i := driver.Index("", m.Value)
		if o.Op == "large-record" && string(m.Value) != string(driver.Value("", i, o.RecordSize)) {
			orderErr = fmt.Errorf("value of %d bytes differs from the one produced", len(m.Value))
		}
		if o.Op == "many-partitions" && i != int(m.Partition) {
			orderErr = fmt.Errorf("partition %d holds record %d", m.Partition, i)
		}
		return r.Records >= o.Records
	}, 0)
	if err != nil {
		return fmt.Errorf("read %d of %d: %w", r.Records, o.Records, err)
	}
	return orderErr
}

type handler struct {
	o       driver.Options
	tl      *driver.Timeline
	mu      sync.Mutex
	n       int
	check   *driver.OffsetChecker
	orderEr error
	done    chan struct{}
	once    sync.Once
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.mu.Lock()
		h.n++
		if err := h.check.See(m.Partition, m.Offset); err != nil && h.orderEr == nil {
			h.orderEr = err
		}
		if h.tl != nil {
			h.tl.Add(m.Partition, m.Offset, driver.Index("", m.Value))
		}
		s.MarkMessage(m, "")
		if h.n >= h.o.Records {
			h.once.Do(func() { close(h.done) })
		}
		h.mu.Unlock()
	}
	return nil
}

func group(ctx context.Context, o driver.Options, r *driver.Result, tl *driver.Timeline) error {
	if o.GroupProtocol == "consumer" {
		return driver.Unsupported("sarama 1.61 has no KIP-848 consumer group protocol")
	}
	c := config(o)
	c.Consumer.Offsets.AutoCommit.Enable = false
	c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	g, err := sarama.NewConsumerGroup(o.Seeds(), o.Group, c)
	if err != nil {
		return err
	}
	defer g.Close()
	h := &handler{o: o, tl: tl, check: driver.NewOffsetChecker(), done: make(chan struct{})}
	gctx, stop := context.WithCancel(ctx)
	var cerr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for gctx.Err() == nil {
			if err := g.Consume(gctx, []string{o.Topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				cerr = err
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	select {
	case <-h.done:
	case <-ctx.Done():
	}
	stop()
	wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Records = h.n
	if h.n < o.Records {
		return fmt.Errorf("read %d of %d records (last error %v): %v", h.n, o.Records, cerr, ctx.Err())
	}
	return h.orderEr
}

func offsets(o driver.Options, r *driver.Result) error {
	cl, err := sarama.NewClient(o.Seeds(), config(o))
	if err != nil {
		return err
	}
	defer cl.Close()
	om, err := sarama.NewOffsetManagerFromClient(o.Group, cl)
	if err != nil {
		return err
	}
	pom, err := om.ManagePartition(o.Topic, 0)
	if err != nil {
		return err
	}
	pom.MarkOffset(5, "")
	om.Commit()
	pom.Close()
	om.Close()
	adm, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		return err
	}
	resp, err := adm.ListConsumerGroupOffsets(o.Group, map[string][]int32{o.Topic: {0}})
	if err != nil {
		return err
	}
	b := resp.GetBlock(o.Topic, 0)
	if b == nil || b.Err != sarama.ErrNoError || b.Offset != 5 {
		return fmt.Errorf("fetched %+v, want offset 5", b)
	}
	r.Records = 1
	return nil
}

func admin(o driver.Options, r *driver.Result) error {
	adm, err := sarama.NewClusterAdmin(o.Seeds(), config(o))
	if err != nil {
		return err
	}
	defer adm.Close()
	name := o.Topic + "-adm"
	if err := adm.CreateTopic(name, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3}, false); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	steps := []string{"create"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		md, err := adm.DescribeTopics([]string{name})
		if err == nil && len(md) == 1 && md[0].Err == sarama.ErrNoError && len(md[0].Partitions) == 3 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("describe %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	steps = append(steps, "describe-topic")
	brokers, _, err := adm.DescribeCluster()
	if err != nil {
		return fmt.Errorf("describe cluster: %w", err)
	}
	for _, b := range brokers {
		host, port := splitAddr(b.Addr())
		r.Brokers = append(r.Brokers, []any{host, port})
	}
	steps = append(steps, "describe-cluster")
	// Any broker may answer; one that has not applied the create yet lists
	// without the topic, so ask again within the bound.
	for {
		topics, err := adm.ListTopics()
		if _, ok := topics[name]; err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("list topics: %v (has %s: false)", err, name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	steps = append(steps, "list-topics")
	if err := adm.DeleteTopic(name); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	steps = append(steps, "delete")
	sort.Strings(steps)
	r.Extra = map[string]any{"steps": steps}
	r.Records = len(steps)
	return nil
}
