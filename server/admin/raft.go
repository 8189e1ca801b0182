package admin

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/server/node"
)

// raftHandlers serves /raft/* on the admin listener for `zkbridge raft`.
func (a *Server) raftHandlers(mux *http.ServeMux) {
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	ctxOf := func(r *http.Request) (context.Context, context.CancelFunc) {
		return context.WithTimeout(r.Context(), 15*time.Second)
	}
	id := func(r *http.Request) (uint64, error) {
		n, err := strconv.ParseUint(r.FormValue("id"), 10, 64)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("id=%q is not a replica id", r.FormValue("id"))
		}
		return n, nil
	}
	mux.HandleFunc("/raft/status", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := ctxOf(r)
		defer cancel()
		st, err := a.status(ctx)
		reply(w, st, err)
	})
	mux.HandleFunc("/raft/hash", func(w http.ResponseWriter, r *http.Request) {
		index, hash, err := a.node.ContentHash()
		reply(w, map[string]any{"applied_index": index, "content_hash": hash}, err)
	})
	post := func(path string, f func(ctx context.Context, r *http.Request) error) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				http.Error(w, "use POST", http.StatusMethodNotAllowed)
				return
			}
			ctx, cancel := ctxOf(r)
			defer cancel()
			reply(w, map[string]string{"result": "ok"}, f(ctx, r))
		})
	}
	post("/raft/transfer-leader", func(ctx context.Context, r *http.Request) error {
		n, err := id(r)
		if err != nil {
			return err
		}
		return a.node.TransferLeader(ctx, n)
	})
	post("/raft/add-voter", func(ctx context.Context, r *http.Request) error {
		n, err := id(r)
		if err != nil {
			return err
		}
		return a.node.AddVoter(ctx, n, r.FormValue("addr"))
	})
	mux.HandleFunc("/raft/local", func(w http.ResponseWriter, r *http.Request) {
		// ?shard=N: this node's replica of a tenant's shard (rebalance
		// watches a new replica catch up).
		if v := r.FormValue("shard"); v != "" && v != "1" {
			shard, err := strconv.ParseUint(v, 10, 64)
			var n *node.Node
			if err == nil && a.tenants != nil {
				n = a.tenants.ShardNode(shard)
			}
			if n == nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": "this node runs no replica of shard " + v})
				return
			}
			reply(w, n.LocalProgress(), nil)
			return
		}
		reply(w, a.node.LocalProgress(), nil)
	})
	post("/raft/add-observer", func(ctx context.Context, r *http.Request) error {
		n, err := id(r)
		if err != nil {
			return err
		}
		return a.node.AddObserver(ctx, n, r.FormValue("addr"))
	})
	post("/raft/remove-voter", func(ctx context.Context, r *http.Request) error {
		n, err := id(r)
		if err != nil {
			return err
		}
		return a.node.RemoveVoter(ctx, n, r.FormValue("force") == "true")
	})
}

// FetchProgress reads another replica's /raft/local (node.ProgressSource) over
// plain HTTP (loopback or cluster network; bounded by ctx and a short timeout).
func FetchProgress(ctx context.Context, adminAddr string, shard uint64) (node.Progress, error) {
	return fetchProgress(ctx, http.DefaultClient, "http://", adminAddr, shard)
}

// HTTPSProgress is FetchProgress for admin ports on HTTPS (admin.forceHttps):
// tlsFor gives the client configuration (trust store, client certificate)
// for an address.
func HTTPSProgress(tlsFor func(addr string) *tls.Config) node.ProgressSource {
	clients := sync.Map{} // addr -> *http.Client, so connections are reused
	return func(ctx context.Context, adminAddr string, shard uint64) (node.Progress, error) {
		c, ok := clients.Load(adminAddr)
		if !ok {
			c, _ = clients.LoadOrStore(adminAddr, &http.Client{Transport: &http.Transport{TLSClientConfig: tlsFor(adminAddr)}})
		}
		return fetchProgress(ctx, c.(*http.Client), "https://", adminAddr, shard)
	}
}

func fetchProgress(ctx context.Context, hc *http.Client, scheme, adminAddr string, shard uint64) (node.Progress, error) {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	url := scheme + adminAddr + "/raft/local"
	if shard > 1 {
		url += "?shard=" + strconv.FormatUint(shard, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return node.Progress{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return node.Progress{}, fmt.Errorf("ask %s: %w", adminAddr, err)
	}
	defer resp.Body.Close()
	var p node.Progress
	if resp.StatusCode != http.StatusOK {
		return p, fmt.Errorf("ask %s: %s", adminAddr, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		return p, fmt.Errorf("ask %s: %w", adminAddr, err)
	}
	return p, nil
}
