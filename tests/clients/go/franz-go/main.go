// The franz-go driver (franz-go v1.22.3, kadm v1.20.0 for admin calls) of
// the client matrix; ops and output as tests/clients/README.md describes.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"epochgate.local/clients/driver"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const version = "1.22.3"

func main() {
	driver.Run("franz-go", version, func(o driver.Options, r *driver.Result) error {
		ctx, cancel := o.Context()
		defer cancel()
		switch o.Op {
		case "metadata":
			return metadata(ctx, o, r)
		case "produce":
			return produce(ctx, o, r, false, "")
		case "produce-idempotent":
			o.Acks = "all"
			return produce(ctx, o, r, true, "")
		case "transactions":
			return transactions(ctx, o, r)
		case "consume-assign":
			if o.Records == 0 || o.Out != "" {
				return dump(ctx, o, r)
			}
			return consume(ctx, o, r, assignOpts(o), nil)
		case "consume-group":
			return consume(ctx, o, r, groupOpts(o), nil)
		case "offsets":
			return offsets(ctx, o, r)
		case "large-record":
			o.Records = 1
			if err := produce(ctx, o, r, true, ""); err != nil {
				return err
			}
			return readBack(ctx, o, r, 1)
		case "many-partitions":
			return manyPartitions(ctx, o, r)
		case "admin":
			return admin(ctx, o, r)
		case "share-consume":
			return share(ctx, o, r)
		case "produce-move":
			o.Acks = "all"
			tl := driver.NewTimeline(o.Out)
			err := produceTimeline(ctx, o, r, tl)
			r.MaxGapMs = tl.MaxGapMs()
			if werr := tl.Close(); err == nil {
				err = werr
			}
			return err
		case "consume-move":
			tl := driver.NewTimeline(o.Out)
			err := consume(ctx, o, r, groupOpts(o), tl)
			r.MaxGapMs = tl.MaxGapMs()
			if werr := tl.Close(); err == nil {
				err = werr
			}
			return err
		}
		return driver.Unsupported("unknown op " + o.Op)
	})
}

func client(o driver.Options, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(o.Seeds()...), kgo.ClientID("eg-matrix-franz-go"),
		kgo.MetadataMinAge(250 * time.Millisecond)}
	return kgo.NewClient(append(opts, extra...)...)
}

func metadata(ctx context.Context, o driver.Options, r *driver.Result) error {
	cl, err := client(o)
	if err != nil {
		return err
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, o.Topic)
	if err != nil {
		return err
	}
	for _, b := range md.Brokers {
		r.Brokers = append(r.Brokers, []any{b.Host, b.Port})
	}
	t, ok := md.Topics[o.Topic]
	if !ok || t.Err != nil {
		return fmt.Errorf("topic %s not in metadata: %v", o.Topic, t.Err)
	}
	r.Partitions = len(t.Partitions)
	return nil
}

func producerOpts(o driver.Options, idempotent bool) []kgo.Opt {
	opts := []kgo.Opt{kgo.DefaultProduceTopic(o.Topic), kgo.ProducerBatchMaxBytes(4 << 20),
		kgo.MaxBufferedRecords(10000)}
	switch o.Acks {
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !idempotent {
		// franz-go is idempotent by default, which needs acks=all.
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	codecs := map[string]kgo.CompressionCodec{"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
	if c, ok := codecs[o.Compression]; ok {
		opts = append(opts, kgo.ProducerBatchCompression(c))
	}
	return opts
}

func produce(ctx context.Context, o driver.Options, r *driver.Result, idempotent bool, prefix string) error {
	cl, err := client(o, producerOpts(o, idempotent)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := 0; i < o.Records; i++ {
		recs = append(recs, &kgo.Record{Key: driver.Key(i), Value: driver.Value(prefix, i, o.RecordSize)})
	}
	res := cl.ProduceSync(ctx, recs...)
	for _, p := range res {
		if p.Err == nil {
			r.Records++
		}
	}
	return res.FirstErr()
}

func produceTimeline(ctx context.Context, o driver.Options, r *driver.Result, tl *driver.Timeline) error {
	cl, err := client(o, producerOpts(o, true)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pace := driver.NewPacer(o.Rate)
	errs := make(chan error, o.Records)
	for i := 0; i < o.Records; i++ {
		pace.Wait(i)
		i := i
		cl.Produce(ctx, &kgo.Record{Key: driver.Key(i), Value: driver.Value("", i, o.RecordSize)},
			func(rec *kgo.Record, err error) {
				if err != nil {
					errs <- err
					return
				}
				tl.Add(rec.Partition, rec.Offset, i)
			})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	r.Records = tl.Count()
	select {
	case err := <-errs:
		return err
	default:
	}
	return nil
}

func transactions(ctx context.Context, o driver.Options, r *driver.Result) error {
	tid := o.TransactionalID
	if tid == "" {
		tid = "tx-" + o.Topic
	}
	cl, err := client(o, append(producerOpts(o, true), kgo.TransactionalID(tid))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, run := range []struct {
		prefix string
		end    kgo.TransactionEndTry
	}{{"c", kgo.TryCommit}, {"a", kgo.TryAbort}} {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		for i := 0; i < o.Records; i++ {
			cl.Produce(ctx, &kgo.Record{Key: driver.Key(i), Value: driver.Value(run.prefix, i, o.RecordSize)}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		if err := cl.EndTransaction(ctx, run.end); err != nil {
			return fmt.Errorf("end transaction (%s): %w", run.prefix, err)
		}
	}
	rc, err := client(o, kgo.ConsumeTopics(o.Topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return err
	}
	defer rc.Close()
	committed, aborted := 0, 0
	// After the committed records, poll one more second: an aborted record
	// a read_committed reader returns would show up there.
	var quiet time.Time
	for ctx.Err() == nil && (committed < o.Records || time.Now().Before(quiet)) {
		pctx, pc := context.WithTimeout(ctx, 300*time.Millisecond)
		f := rc.PollFetches(pctx)
		pc()
		f.EachRecord(func(rec *kgo.Record) {
			if driver.Index("c", rec.Value) >= 0 {
				committed++
			} else {
				aborted++
			}
		})
		if committed >= o.Records && quiet.IsZero() {
			quiet = time.Now().Add(time.Second)
		}
	}
	r.Records = committed
	if committed != o.Records || aborted != 0 {
		return fmt.Errorf("read_committed saw %d committed (want %d) and %d aborted", committed, o.Records, aborted)
	}
	return nil
}

func assignOpts(o driver.Options) []kgo.Opt {
	parts := map[int32]kgo.Offset{}
	for p := 0; p < o.Partitions; p++ {
		parts[int32(p)] = kgo.NewOffset().AtStart()
	}
	return []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: parts})}
}

func groupOpts(o driver.Options) []kgo.Opt {
	opts := []kgo.Opt{kgo.ConsumeTopics(o.Topic), kgo.ConsumerGroup(o.Group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit()}
	if o.GroupProtocol == "consumer" {
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	}
	return opts
}

func consume(ctx context.Context, o driver.Options, r *driver.Result, opts []kgo.Opt, tl *driver.Timeline) error {
	cl, err := client(o, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	check := driver.NewOffsetChecker()
	var orderErr error
	for r.Records < o.Records && ctx.Err() == nil {
		f := cl.PollFetches(ctx)
		for _, fe := range f.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				fmt.Fprintln(os.Stderr, "fetch error:", fe.Topic, fe.Partition, fe.Err)
			}
		}
		f.EachRecord(func(rec *kgo.Record) {
			r.Records++
			if err := check.See(rec.Partition, rec.Offset); err != nil && orderErr == nil {
				orderErr = err
			}
			if tl != nil {
				tl.Add(rec.Partition, rec.Offset, driver.Index("", rec.Value))
			}
		})
	}
	if r.Records < o.Records {
		return fmt.Errorf("read %d of %d records: %v", r.Records, o.Records, ctx.Err())
	}
	if orderErr != nil {
		return orderErr
	}
	if o.Op != "consume-assign" {
		cctx, cc := context.WithTimeout(context.Background(), 10*time.Second)
		defer cc()
		if err := cl.CommitUncommittedOffsets(cctx); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	return nil
}

// readBack reads `want` records from the start and checks each value is the
// one produce wrote (byte-equal).
func readBack(ctx context.Context, o driver.Options, r *driver.Result, want int) error {
	cl, err := client(o, kgo.ConsumeTopics(o.Topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(8<<20), kgo.FetchMaxPartitionBytes(4<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	got := 0
	for got < want && ctx.Err() == nil {
		f := cl.PollFetches(ctx)
		var bad error
		f.EachRecord(func(rec *kgo.Record) {
			i := driver.Index("", rec.Value)
			if i < 0 || string(rec.Value) != string(driver.Value("", i, o.RecordSize)) {
				bad = fmt.Errorf("record %d at offset %d: value of %d bytes differs", got, rec.Offset, len(rec.Value))
			}
			got++
		})
		if bad != nil {
			return bad
		}
	}
	if got < want {
		return fmt.Errorf("read back %d of %d records", got, want)
	}
	return nil
}

func manyPartitions(ctx context.Context, o driver.Options, r *driver.Result) error {
	cl, err := client(o, append(producerOpts(o, true), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := 0; p < o.Partitions; p++ {
		recs = append(recs, &kgo.Record{Partition: int32(p), Key: driver.Key(p), Value: driver.Value("", p, o.RecordSize)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return err
	}
	o.Records = o.Partitions
	rc, err := client(o, assignOpts(o)...)
	if err != nil {
		return err
	}
	defer rc.Close()
	seen := map[int32]bool{}
	for len(seen) < o.Partitions && ctx.Err() == nil {
		rc.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			if driver.Index("", rec.Value) == int(rec.Partition) {
				seen[rec.Partition] = true
			}
		})
	}
	r.Records = len(seen)
	if len(seen) < o.Partitions {
		return fmt.Errorf("read back %d of %d partitions' records", len(seen), o.Partitions)
	}
	return nil
}

func offsets(ctx context.Context, o driver.Options, r *driver.Result) error {
	cl, err := client(o)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: o.Topic, Partition: 0, At: 5, LeaderEpoch: -1})
	cr, err := adm.CommitOffsets(ctx, o.Group, os)
	if err != nil {
		return err
	}
	if err := cr.Error(); err != nil {
		return err
	}
	fr, err := adm.FetchOffsets(ctx, o.Group)
	if err != nil {
		return err
	}
	got, ok := fr.Lookup(o.Topic, 0)
	if !ok || got.Err != nil || got.At != 5 {
		return fmt.Errorf("fetched %+v, want offset 5", got)
	}
	r.Records = 1
	return nil
}

func admin(ctx context.Context, o driver.Options, r *driver.Result) error {
	cl, err := client(o)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	name := o.Topic + "-adm"
	if cr, err := adm.CreateTopic(ctx, 3, 3, nil, name); err != nil || cr.Err != nil {
		return fmt.Errorf("create: %v %v", err, cr.Err)
	}
	steps := []string{"create"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		md, err := adm.Metadata(ctx, name)
		if err == nil && md.Topics[name].Err == nil && len(md.Topics[name].Partitions) == 3 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("describe %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	steps = append(steps, "describe-topic")
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("describe cluster: %w", err)
	}
	for _, b := range md.Brokers {
		r.Brokers = append(r.Brokers, []any{b.Host, b.Port})
	}
	steps = append(steps, "describe-cluster")
	// Any broker may answer; one that has not applied the create yet lists
	// without the topic, so ask again within the bound.
	for {
		topics, err := adm.ListTopics(ctx)
		if err == nil && topics.Has(name) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("list topics: %v (has %s: false)", err, name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	steps = append(steps, "list-topics")
	if dr, err := adm.DeleteTopic(ctx, name); err != nil || dr.Err != nil {
		return fmt.Errorf("delete: %v %v", err, dr.Err)
	}
	steps = append(steps, "delete")
	sort.Strings(steps)
	r.Extra = map[string]any{"steps": steps}
	r.Records = len(steps)
	return nil
}

func share(ctx context.Context, o driver.Options, r *driver.Result) error {
	cl, err := client(o, kgo.ConsumeTopics(o.Topic), kgo.ShareGroup(o.Group))
	if err != nil {
		return err
	}
	defer cl.Close()
	// Share groups start at the latest offset unless the group says otherwise.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = o.Group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("set share.auto.offset.reset: %w", err)
	}
	for _, rr := range resp.Resources {
		if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
			return fmt.Errorf("set share.auto.offset.reset: %w", err)
		}
	}
	seen := map[int]bool{}
	for len(seen) < o.Records && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			seen[driver.Index("", rec.Value)] = true
			rec.Ack(kgo.AckAccept)
		})
	}
	r.Records = len(seen)
	fctx, fc := context.WithTimeout(context.Background(), 5*time.Second)
	defer fc()
	_ = cl.FlushAcks(fctx)
	if len(seen) < o.Records {
		return fmt.Errorf("share consumer read %d of %d records", len(seen), o.Records)
	}
	return nil
}

// dump is consume-assign as the harness's reference reader: with --records
// 0 it reads every partition up to its end offset (so duplicates show),
// and it writes every record to --out.
func dump(ctx context.Context, o driver.Options, r *driver.Result) error {
	cl, err := client(o, assignOpts(o)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	// Right after a leader move the new leader may not know its high
	// watermark yet and answers ListOffsets with an error for that
	// partition (OFFSET_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER); ask again,
	// within the bound, until every partition has its end offset: a
	// partition left out would read as lost records.
	var ends kadm.ListedOffsets
	for {
		ends, err = kadm.NewClient(cl).ListEndOffsets(ctx, o.Topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("end offsets: %v", err)
	}
	left := map[int32]int64{}
	want := 0
	ends.Each(func(e kadm.ListedOffset) {
		if e.Offset > 0 {
			left[e.Partition] = e.Offset
		}
	})
	tl := driver.NewTimeline(o.Out)
	for (o.Records == 0 && len(left) > 0 || o.Records > 0 && tl.Count() < o.Records) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			tl.Add(rec.Partition, rec.Offset, driver.Index("", rec.Value))
			if end, ok := left[rec.Partition]; ok && rec.Offset+1 >= end {
				delete(left, rec.Partition)
			}
		})
	}
	_ = want
	r.Records = tl.Count()
	if err := tl.Close(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("read %d records, partitions %v not to their end: %v", r.Records, left, ctx.Err())
	}
	return nil
}
