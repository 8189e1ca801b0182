package server

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/client"
)

// importNodes imports nodes through one Import stream and waits for its
// answer.
func importNodes(ctx context.Context, t *testing.T, nc zkbridgev1.BridgeClient, nodes ...*zkbridgev1.ImportedNode) {
	t.Helper()
	st, err := nc.Import(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&zkbridgev1.ImportBatch{Nodes: nodes}); err != nil {
		t.Fatal(err)
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatalf("import: %v", err)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("after the import's answer: %v", err)
	}
}

// A migration import's batch is one change-log record that does not list
// its nodes: a feed whose prefixes it touches delivers the records before
// it, then ends with OUT_OF_RANGE naming the offset after it, as after
// compaction; the Go client's watcher then delivers a snapshot holding the
// imported nodes and resumes after it, so every change is seen once. A
// feed of another subtree goes past the import.
func TestNativeFeedImportIsASnapshotPoint(t *testing.T) {
	s, nc, _ := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	put := func(p string) int64 {
		r, err := nc.Put(ctx, &zkbridgev1.PutRequest{Path: p, Data: []byte(p), ExpectedVersion: -1})
		if err != nil {
			t.Fatal(err)
		}
		return r.Stat.Mzxid
	}
	put("/app")
	before := put("/app/before")
	put("/other")

	// The Go client's watcher, from /app/before on.
	cl, err := client.Dial(ctx, []string{s.NativeAddr()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w := cl.Watch(ctx, []string{"/app"}, before)
	defer w.Close()
	var events []string
	next := func() {
		t.Helper()
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended: %v after %v", w.Err(), events)
			}
			if ev.Snapshot != nil {
				var paths []string
				for _, n := range ev.Snapshot.Nodes {
					paths = append(paths, n.Path)
				}
				events = append(events, fmt.Sprintf("snapshot %v", paths))
				return
			}
			events = append(events, describe([]*zkbridgev1.ChangeRecord{ev.Record})...)
		case <-ctx.Done():
			t.Fatalf("watch: %v after %v", ctx.Err(), events)
		}
	}
	next() // /app/before

	node := func(p string) *zkbridgev1.ImportedNode {
		return &zkbridgev1.ImportedNode{Path: p, Data: []byte(p), Czxid: 1, Mzxid: 1, Pzxid: 1}
	}
	importNodes(ctx, t, nc, node("/app/imported"), node("/app/imported/a"), node("/app/imported/b"))
	next() // the snapshot
	after := put("/app/after")
	otherAfter := put("/other/after")
	next() // /app/after
	want := "[CHANGE_TYPE_CREATED /app/before snapshot [/app /app/before /app/imported /app/imported/a /app/imported/b] CHANGE_TYPE_CREATED /app/after]"
	if fmt.Sprint(events) != want {
		t.Fatalf("watch %v\nwant %s", events, want)
	}

	// The raw stream: the records before the import, then OUT_OF_RANGE
	// naming the offset after it.
	st, err := nc.FetchMetadata(ctx, &zkbridgev1.FetchMetadataRequest{Prefixes: []string{"/app"}, FromOffset: before})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		r, err := st.Recv()
		if err != nil {
			wantCode(t, "a feed reaching an import", err, codes.OutOfRange)
			var oldest int64
			for _, d := range status.Convert(err).Details() {
				if c, ok := d.(*zkbridgev1.OffsetCompacted); ok {
					oldest = c.OldestOffset
				}
			}
			if oldest <= before || oldest > after {
				t.Fatalf("OffsetCompacted %d, want the offset after the import (between %d and %d)", oldest, before, after)
			}
			break
		}
		got = append(got, describe(r.Records)...)
	}
	if fmt.Sprint(got) != "[CHANGE_TYPE_CREATED /app/before]" {
		t.Fatalf("records before the import %v", got)
	}

	// Another subtree's feed is not stopped by it.
	other, err := nc.FetchMetadata(ctx, &zkbridgev1.FetchMetadataRequest{Prefixes: []string{"/other"}, FromOffset: before})
	if err != nil {
		t.Fatal(err)
	}
	recs := nextRecords(t, other, 2)
	if d := describe(recs); fmt.Sprint(d) != "[CHANGE_TYPE_CREATED /other CHANGE_TYPE_CREATED /other/after]" || recs[1].Offset != otherAfter {
		t.Fatalf("feed of /other %v", d)
	}
}
