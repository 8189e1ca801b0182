package server

import (
	"context"
	"io"
	"testing"
	"time"
)

// An Import stream the client closes without a batch (a live migration's
// catch-up pass with nothing to send) ends cleanly, not with an error.
func TestNativeImportEmptyStream(t *testing.T) {
	_, nc, _ := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := nc.Import(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Recv(); err != io.EOF {
		t.Fatalf("an empty import stream ended with %v %v, want a clean end", r, err)
	}
}
