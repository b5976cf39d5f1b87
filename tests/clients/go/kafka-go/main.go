// The kafka-go driver (segmentio kafka-go v0.4.51) of the client matrix;
// ops and output as tests/clients/README.md describes. kafka-go has no
// idempotent or transactional producer, no KIP-848 and no share consumer:
// those ops answer "unsupported" with that reason.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"epochgate.local/clients/driver"
	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

const version = "0.4.51"

func main() {
	driver.Run("kafka-go", version, func(o driver.Options, r *driver.Result) error {
		ctx, cancel := o.Context()
		defer cancel()
		switch o.Op {
		case "metadata":
			return metadata(ctx, o, r)
		case "produce":
			return produce(ctx, o, r, nil)
		case "produce-idempotent":
			return driver.Unsupported("kafka-go 0.4 has no idempotent producer")
		case "transactions":
			return driver.Unsupported("kafka-go 0.4 has no transactional producer")
		case "consume-assign":
			return assign(ctx, o, r)
		case "consume-group":
			return group(ctx, o, r, nil)
		case "offsets":
			return offsets(ctx, o, r)
		case "large-record":
			o.Records = 1
			if err := produce(ctx, o, r, nil); err != nil {
				return err
			}
			return assign(ctx, o, r)
		case "many-partitions":
			o.Records = o.Partitions
			if err := produce(ctx, o, r, nil); err != nil {
				return err
			}
			return fetchEach(ctx, o, r)
		case "admin":
			return admin(ctx, o, r)
		case "share-consume":
			return driver.Unsupported("kafka-go 0.4 has no share consumer (KIP-932)")
		case "produce-move":
			// Not idempotent (kafka-go has none): acks=all with retries.
			o.Acks = "all"
			tl := driver.NewTimeline(o.Out)
			err := produce(ctx, o, r, tl)
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

func metadata(ctx context.Context, o driver.Options, r *driver.Result) error {
	cl := &kafka.Client{Addr: kafka.TCP(o.Seeds()...)}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{o.Topic}})
	if err != nil {
		return err
	}
	for _, b := range md.Brokers {
		r.Brokers = append(r.Brokers, []any{b.Host, b.Port})
	}
	for _, t := range md.Topics {
		if t.Name == o.Topic {
			if t.Error != nil {
				return t.Error
			}
			r.Partitions = len(t.Partitions)
		}
	}
	return nil
}

// byIndex puts record i on partition i (many-partitions).
type byIndex struct{}

func (byIndex) Balance(m kafka.Message, partitions ...int) int {
	return partitions[driver.Index("", m.Value)%len(partitions)]
}

func produce(ctx context.Context, o driver.Options, r *driver.Result, tl *driver.Timeline) error {
	w := &kafka.Writer{Addr: kafka.TCP(o.Seeds()...), Topic: o.Topic, Balancer: &kafka.Hash{},
		BatchTimeout: 5 * time.Millisecond, BatchBytes: 4 << 20, MaxAttempts: 20,
		WriteBackoffMin: 50 * time.Millisecond, WriteBackoffMax: 500 * time.Millisecond}
	if o.Op == "many-partitions" {
		w.Balancer = byIndex{}
	}
	switch o.Acks {
	case "0":
		w.RequiredAcks = kafka.RequireNone
	case "1":
		w.RequiredAcks = kafka.RequireOne
	default:
		w.RequiredAcks = kafka.RequireAll
	}
	codecs := map[string]compress.Compression{"gzip": compress.Gzip, "snappy": compress.Snappy,
		"lz4": compress.Lz4, "zstd": compress.Zstd}
	if c, ok := codecs[o.Compression]; ok {
		w.Compression = c
	}
	defer w.Close()
	if tl != nil {
		// One message per call, paced, each acknowledged before the next:
		// the Completion callback sees the offsets.
		w.Async = true
		var mu sync.Mutex
		var firstErr error
		w.Completion = func(msgs []kafka.Message, err error) {
			for _, m := range msgs {
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				tl.Add(int32(m.Partition), m.Offset, driver.Index("", m.Value))
			}
		}
		pace := driver.NewPacer(o.Rate)
		for i := 0; i < o.Records && ctx.Err() == nil; i++ {
			pace.Wait(i)
			if err := w.WriteMessages(ctx, kafka.Message{Key: driver.Key(i), Value: driver.Value("", i, o.RecordSize)}); err != nil {
				return err
			}
		}
		w.Close()
		r.Records = tl.Count()
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil {
			return firstErr
		}
		if r.Records < o.Records {
			return fmt.Errorf("%d of %d acked", r.Records, o.Records)
		}
		return nil
	}
	var msgs []kafka.Message
	for i := 0; i < o.Records; i++ {
		msgs = append(msgs, kafka.Message{Key: driver.Key(i), Value: driver.Value("", i, o.RecordSize)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		return err
	}
	r.Records = len(msgs)
	return nil
}

// assign reads every partition from the first offset with one Reader per
// partition (kafka-go's way to consume without a group).
func assign(ctx context.Context, o driver.Options, r *driver.Result) error {
	n := o.Partitions
	// With --records 0 (the harness's reference reader) every partition is
	// read to its end offset, so duplicates show; --out gets every record.
	if o.Records == 0 {
		cl := &kafka.Client{Addr: kafka.TCP(o.Seeds()...)}
		var reqs []kafka.OffsetRequest
		for p := 0; p < n; p++ {
			reqs = append(reqs, kafka.LastOffsetOf(p))
		}
		lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{o.Topic: reqs}})
		if err != nil {
			return err
		}
		for _, po := range lo.Topics[o.Topic] {
			if po.Error != nil {
				return po.Error
			}
			// Fresh topics without transactions: offsets 0..end-1 are records.
			if po.LastOffset > 0 {
				o.Records += int(po.LastOffset)
			}
		}
	}
	tl := driver.NewTimeline(o.Out)
	defer tl.Close()
	var mu sync.Mutex
	check := driver.NewOffsetChecker()
	var bad, readErr error
	got := 0
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for p := 0; p < n; p++ {
		rd := kafka.NewReader(kafka.ReaderConfig{Brokers: o.Seeds(), Topic: o.Topic, Partition: p,
			MinBytes: 1, MaxBytes: 8 << 20, MaxWait: 200 * time.Millisecond})
		rd.SetOffset(kafka.FirstOffset)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rd.Close()
			for {
				m, err := rd.ReadMessage(rctx)
				if err != nil {
					if rctx.Err() == nil {
						mu.Lock()
						if readErr == nil {
							readErr = fmt.Errorf("partition %d: %w", rd.Config().Partition, err)
						}
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				got++
				tl.Add(int32(m.Partition), m.Offset, driver.Index("", m.Value))
				if err := check.See(int32(m.Partition), m.Offset); err != nil && bad == nil {
					bad = err
				}
				i := driver.Index("", m.Value)
				if o.Op == "large-record" && string(m.Value) != string(driver.Value("", i, o.RecordSize)) {
					bad = fmt.Errorf("value of %d bytes differs from the one produced", len(m.Value))
				}
				if o.Op == "many-partitions" && i != m.Partition {
					bad = fmt.Errorf("partition %d holds record %d", m.Partition, i)
				}
				if got >= o.Records {
					stop()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.Records = got
	if got < o.Records {
		return fmt.Errorf("read %d of %d records: %v (first reader error: %v)", got, o.Records, ctx.Err(), readErr)
	}
	return bad
}

func group(ctx context.Context, o driver.Options, r *driver.Result, tl *driver.Timeline) error {
	if o.GroupProtocol == "consumer" {
		return driver.Unsupported("kafka-go 0.4 has no KIP-848 consumer group protocol")
	}
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: o.Seeds(), Topic: o.Topic, GroupID: o.Group,
		StartOffset: kafka.FirstOffset, MinBytes: 1, MaxBytes: 8 << 20, MaxWait: 200 * time.Millisecond,
		HeartbeatInterval: time.Second, JoinGroupBackoff: 200 * time.Millisecond})
	defer rd.Close()
	check := driver.NewOffsetChecker()
	var bad error
	var last kafka.Message
	for r.Records < o.Records {
		m, err := rd.FetchMessage(ctx)
		if err != nil {
			return fmt.Errorf("read %d of %d records: %w", r.Records, o.Records, err)
		}
		r.Records++
		last = m
		if err := check.See(int32(m.Partition), m.Offset); err != nil && bad == nil {
			bad = err
		}
		if tl != nil {
			tl.Add(int32(m.Partition), m.Offset, driver.Index("", m.Value))
		}
		if r.Records%50 == 0 || r.Records == o.Records {
			if err := rd.CommitMessages(ctx, m); err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("commit: %w", err)
			}
		}
	}
	_ = last
	return bad
}

func offsets(ctx context.Context, o driver.Options, r *driver.Result) error {
	cl := &kafka.Client{Addr: kafka.TCP(o.Seeds()...)}
	// A commit outside any generation (-1, no member): a standalone group.
	cr, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: o.Group, GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{o.Topic: {{Partition: 0, Offset: 5}}}})
	if err != nil {
		return err
	}
	for _, p := range cr.Topics[o.Topic] {
		if p.Error != nil {
			return p.Error
		}
	}
	fr, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: o.Group, Topics: map[string][]int{o.Topic: {0}}})
	if err != nil {
		return err
	}
	if fr.Error != nil {
		return fr.Error
	}
	for _, p := range fr.Topics[o.Topic] {
		if p.Partition == 0 && p.Error == nil && p.CommittedOffset == 5 {
			r.Records = 1
			return nil
		}
	}
	return fmt.Errorf("fetched %+v, want offset 5", fr.Topics)
}

func admin(ctx context.Context, o driver.Options, r *driver.Result) error {
	cl := &kafka.Client{Addr: kafka.TCP(o.Seeds()...)}
	name := o.Topic + "-adm"
	cr, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: name, NumPartitions: 3, ReplicationFactor: 3}}})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := cr.Errors[name]; err != nil {
		return fmt.Errorf("create: %w", err)
	}
	steps := []string{"create"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{name}})
		if err == nil && len(md.Topics) == 1 && md.Topics[0].Error == nil && len(md.Topics[0].Partitions) == 3 {
			for _, b := range md.Brokers {
				r.Brokers = append(r.Brokers, []any{b.Host, b.Port})
			}
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("describe %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// kafka-go has no DescribeCluster call; Metadata's broker list stands in.
	steps = append(steps, "describe-topic")
	for found := false; !found; {
		md, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
		if err == nil {
			for _, t := range md.Topics {
				found = found || t.Name == name
			}
		}
		if !found && time.Now().After(deadline) {
			return fmt.Errorf("list topics: %v (has %s: false)", err, name)
		}
		if !found {
			time.Sleep(100 * time.Millisecond)
		}
	}
	steps = append(steps, "list-topics")
	dr, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{name}})
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if err := dr.Errors[name]; err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	steps = append(steps, "delete")
	sort.Strings(steps)
	r.Extra = map[string]any{"steps": steps}
	r.Records = len(steps)
	return nil
}

// fetchEach reads partition p's one record with one Fetch per partition
// (kafka.Client.Fetch). Two hundred Readers, one per partition, do not all
// deliver within the bound: each runs its own connection and fetch loop,
// and in a run some never return their record in time, on either path.
func fetchEach(ctx context.Context, o driver.Options, r *driver.Result) error {
	cl := &kafka.Client{Addr: kafka.TCP(o.Seeds()...)}
	r.Records = 0
	for p := 0; p < o.Partitions; p++ {
		for {
			res, err := cl.Fetch(ctx, &kafka.FetchRequest{Topic: o.Topic, Partition: p, Offset: 0,
				MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 500 * time.Millisecond})
			if err == nil && res.Error == nil {
				rec, rerr := res.Records.ReadRecord()
				if rerr == nil {
					v, _ := io.ReadAll(rec.Value)
					if driver.Index("", v) != p {
						return fmt.Errorf("partition %d holds record %d", p, driver.Index("", v))
					}
					r.Records++
					break
				}
				err = rerr
			} else if err == nil {
				err = res.Error
			}
			if ctx.Err() != nil {
				return fmt.Errorf("read %d of %d partitions' records: partition %d: %v", r.Records, o.Partitions, p, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}
