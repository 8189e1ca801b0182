package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// nextRecords reads the stream until it has n records (progress-only
// responses are skipped), bounded by the stream's context.
func nextRecords(t *testing.T, st zkbridgev1.Bridge_FetchMetadataClient, n int) []*zkbridgev1.ChangeRecord {
	t.Helper()
	var out []*zkbridgev1.ChangeRecord
	for len(out) < n {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("fetch metadata after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, r.Records...)
	}
	return out
}

func describe(recs []*zkbridgev1.ChangeRecord) []string {
	var out []string
	for _, r := range recs {
		for _, c := range r.Changes {
			out = append(out, fmt.Sprintf("%s %s", c.Type, c.Path))
		}
	}
	return out
}

// The change feed carries every change under its prefixes, from both
// doors, in zxid order, and an expired session's deletes.
func TestNativeFeedSeesBothDoorsInOrder(t *testing.T) {
	_, nc, zc := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := nc.FetchMetadata(ctx, &zkbridgev1.FetchMetadataRequest{Prefixes: []string{"/app"}, MaxWaitMs: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create("/app", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create("/other", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/app/a", Data: []byte("1"), ExpectedVersion: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Set("/app/a", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	eph, _, err := gozk.Connect([]string{zc.Server()}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eph.Create("/app/e", nil, gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	eph.Close() // the session ends: its ephemeral is deleted
	if _, err := zc.SetACL("/app/a", gozk.WorldACL(gozk.PermRead|gozk.PermWrite|gozk.PermDelete|gozk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	if err := zc.Delete("/app/a", -1); err != nil {
		t.Fatal(err)
	}
	recs := nextRecords(t, st, 7)
	want := []string{"CHANGE_TYPE_CREATED /app", "CHANGE_TYPE_CREATED /app/a", "CHANGE_TYPE_DATA /app/a", "CHANGE_TYPE_CREATED /app/e",
		"CHANGE_TYPE_DELETED /app/e", "CHANGE_TYPE_ACL /app/a", "CHANGE_TYPE_DELETED /app/a"}
	if got := describe(recs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("feed %v\nwant %v", got, want)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Offset <= recs[i-1].Offset {
			t.Fatalf("offsets not increasing: %d then %d", recs[i-1].Offset, recs[i].Offset)
		}
	}
	if string(recs[2].Changes[0].Data) != "2" || recs[2].Changes[0].Stat.Version != 1 {
		t.Fatalf("data change %+v", recs[2].Changes[0])
	}

	// A stream resumed from an offset starts exactly there.
	st2, err := nc.FetchMetadata(ctx, &zkbridgev1.FetchMetadataRequest{Prefixes: []string{"/app"}, FromOffset: recs[3].Offset})
	if err != nil {
		t.Fatal(err)
	}
	again := nextRecords(t, st2, 4)
	if again[0].Offset != recs[3].Offset || fmt.Sprint(describe(again)) != fmt.Sprint(want[3:]) {
		t.Fatalf("resumed feed %v", describe(again))
	}

	// Bad arguments.
	bad, err := nc.FetchMetadata(ctx, &zkbridgev1.FetchMetadataRequest{Prefixes: []string{"app"}})
	if err == nil {
		_, err = bad.Recv()
	}
	wantCode(t, "a relative prefix", err, codes.InvalidArgument)
}

// A from_offset older than the retained log is OUT_OF_RANGE with the
// oldest retained offset; a snapshot and a resume from its offset + 1 miss
// nothing.
func TestNativeFeedCompactionAndSnapshot(t *testing.T) {
	s := startTestServer(t, func(c *Config) {
		c.NativeAddr = "127.0.0.1:0"
		c.ChangeLogMaxRecords = 20
	})
	nc := zkbridgev1.NewBridgeClient(grpcConnOf(t, s))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, p := range []string{"/t", "/t/x", "/t/x/deep", "/t/y", "/u"} {
		if _, err := nc.Put(ctx, &zkbridgev1.PutRequest{Path: p, Data: []byte(p), ExpectedVersion: -1}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 40; i++ {
		if _, err := nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/u", Data: []byte(fmt.Sprint(i)), ExpectedVersion: -1}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := nc.FetchMetadata(ctx, &zkbridgev1.FetchMetadataRequest{FromOffset: 1})
	if err == nil {
		_, err = st.Recv()
	}
	wantCode(t, "a compacted offset", err, codes.OutOfRange)
	var oldest int64
	for _, d := range status.Convert(err).Details() {
		if c, ok := d.(*zkbridgev1.OffsetCompacted); ok {
			oldest = c.OldestOffset
		}
	}
	if oldest <= 1 {
		t.Fatalf("OffsetCompacted detail %d", oldest)
	}

	snap, err := nc.FetchMetadataSnapshot(ctx, &zkbridgev1.FetchMetadataSnapshotRequest{Prefixes: []string{"/t"}})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	var offset int64
	for {
		r, err := snap.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		offset = r.Offset
		for _, n := range r.Nodes {
			paths = append(paths, n.Path)
			if string(n.Data) != n.Path {
				t.Fatalf("snapshot node %s holds %q", n.Path, n.Data)
			}
		}
		if r.Last {
			break
		}
	}
	if fmt.Sprint(paths) != "[/t /t/x /t/x/deep /t/y]" || offset < oldest {
		t.Fatalf("snapshot %v at offset %d", paths, offset)
	}
	if _, err := nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/t/z", ExpectedVersion: -1}); err != nil {
		t.Fatal(err)
	}
	feed, err := nc.FetchMetadata(ctx, &zkbridgev1.FetchMetadataRequest{Prefixes: []string{"/t"}, FromOffset: offset + 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(nextRecords(t, feed, 1)); fmt.Sprint(got) != "[CHANGE_TYPE_CREATED /t/z]" {
		t.Fatalf("feed after the snapshot %v", got)
	}
}

// Open streams do not hold up a shutdown: the feed ends at once with
// Unavailable (resume elsewhere), a keep-alive stream within the grace.
func TestNativeStopWithOpenStreams(t *testing.T) {
	s := startTestServer(t, func(c *Config) { c.NativeAddr = "127.0.0.1:0" })
	nc := zkbridgev1.NewBridgeClient(grpcConnOf(t, s))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	feed, err := nc.FetchMetadata(ctx, &zkbridgev1.FetchMetadataRequest{MaxWaitMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	ka, err := nc.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // both streams are open on the server
	start := time.Now()
	s.Stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Stop took %v with open streams", d)
	}
	for {
		_, err := feed.Recv()
		if err != nil {
			wantCode(t, "the feed at shutdown", err, codes.Unavailable)
			break
		}
	}
	if _, err := ka.Recv(); err == nil {
		t.Fatal("the keep-alive stream outlived the server")
	}
}

// A value over 4 KiB reaches the feed from its node: whole while the node
// is at that version, marked superseded once a later set replaced it
// (the later change carries the value).
func TestNativeFeedLargeValues(t *testing.T) {
	_, nc, zc := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	big := func(b byte) []byte { return bytes.Repeat([]byte{b}, 100_000) }
	if _, err := zc.Create("/big", big('a'), 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	st, err := nc.FetchMetadata(ctx, &zkbridgev1.FetchMetadataRequest{Prefixes: []string{"/big"}})
	if err != nil {
		t.Fatal(err)
	}
	first := nextRecords(t, st, 1)[0].Changes[0]
	if !bytes.Equal(first.Data, big('a')) || first.DataSuperseded {
		t.Fatalf("the create read at once: %d bytes, superseded %v", len(first.Data), first.DataSuperseded)
	}
	if _, err := zc.Set("/big", big('b'), -1); err != nil {
		t.Fatal(err)
	}
	again, err := nc.FetchMetadata(ctx, &zkbridgev1.FetchMetadataRequest{Prefixes: []string{"/big"}})
	if err != nil {
		t.Fatal(err)
	}
	recs := nextRecords(t, again, 2)
	if c := recs[0].Changes[0]; c.Data != nil || !c.DataSuperseded || c.Stat.Version != 0 {
		t.Fatalf("the create read after the set: %d bytes, superseded %v, version %d", len(c.Data), c.DataSuperseded, c.Stat.Version)
	}
	if c := recs[1].Changes[0]; !bytes.Equal(c.Data, big('b')) || c.DataSuperseded {
		t.Fatalf("the set: %d bytes, superseded %v", len(c.Data), c.DataSuperseded)
	}
}
