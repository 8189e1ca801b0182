package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	gozk "github.com/go-zookeeper/zk"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// screenshotDir is where the browser test keeps its screenshots: the
// directory named by ZKBRIDGE_CONSOLE_SCREENSHOTS (`make screenshots`
// points it at docs/images), else a fixed directory under the system's temp
// dir that outlives the test, so a failure can be looked at.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("ZKBRIDGE_CONSOLE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "zkbridge-console-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The web console in a real browser (headless Chromium) against a running
// 3-node cluster: every page opens; the cluster table lists the three nodes
// and a live chart draws new samples; the tree is navigated by clicking; an
// administrator expires a session from the Sessions page of another node
// than the one its client is connected to, and its ephemeral vanishes;
// the Bridge page shows a lease with its member, a change-feed subscriber
// and an AllocateID counter.
func TestConsoleInBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: run make deps (scripts/install-zookeeper.sh installs Debian's chromium)")
	}
	servers := startClusterWith(t, 3, 50*time.Millisecond, func(c *Config) {
		withConsole(true)(c)
		c.NativeAddr = "127.0.0.1:0"
	})
	shots := screenshotDir(t)
	ui := func(i int, path string) string { return "http://" + servers[i].AdminAddr() + path }

	// What the pages will show: a small tree, an ephemeral of a client on
	// node 2, a lease, a counter and an open change feed on node 3.
	zc, _, err := gozk.Connect([]string{servers[1].ClientAddr()}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	for _, p := range []string{"/app", "/app/config", "/app/workers", "/ids"} {
		if _, err := zc.Create(p, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	if _, err := zc.Set("/app/config", []byte(`{"replicas":3,"region":"eu-west"}`), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create("/app/workers/worker-1", []byte("10.0.0.7:9000"), gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sid := zc.SessionID()

	cc, err := grpc.NewClient(servers[2].NativeAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	bridge := zkbridgev1.NewBridgeClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg, err := bridge.Register(ctx, &zkbridgev1.RegisterRequest{Group: "fleet", MemberId: "server-1", Payload: []byte("host-a:9123"), LeaseTtlMs: 60000})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	go func() { // the cluster's short tick caps a lease's TTL at a second: keep it alive
		for ctx.Err() == nil {
			_, _ = bridge.Heartbeat(ctx, &zkbridgev1.HeartbeatRequest{LeaseId: reg.Lease.Id})
			time.Sleep(150 * time.Millisecond)
		}
	}()
	if _, err := bridge.SetCutoverPolicy(ctx, &zkbridgev1.SetCutoverPolicyRequest{Subtree: "/fleet", Mode: zkbridgev1.CutoverMode_CUTOVER_MODE_NATIVE}); err != nil {
		t.Fatalf("cutover policy: %v", err)
	}
	if _, err := bridge.AllocateID(ctx, &zkbridgev1.AllocateIDRequest{CounterPath: "/ids/orders", Count: 100}); err != nil {
		t.Fatalf("allocate id: %v", err)
	}
	feedCtx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	feed, err := bridge.FetchMetadata(feedCtx, &zkbridgev1.FetchMetadataRequest{Prefixes: []string{"/app"}, MaxWaitMs: 200})
	if err != nil {
		t.Fatalf("fetch metadata: %v", err)
	}
	go func() {
		for {
			if _, err := feed.Recv(); err != nil {
				return
			}
		}
	}()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer stopAlloc()
	browser, stopBrowser := chromedp.NewContext(alloc)
	defer stopBrowser()
	// Start the browser on a context without a deadline (a deadline would
	// end the browser), then bound each step.
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(consoleUser+":"+consolePass))
	if _, err := chromedp.Call(browser, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(browser, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
		t.Fatal(err)
	}
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(browser, 45*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			// Keep what the browser showed for the failure.
			dctx, cancel := context.WithTimeout(browser, 10*time.Second)
			defer cancel()
			if png, serr := chromedp.Run(dctx, chromedp.CaptureScreenshot()); serr == nil {
				_ = os.WriteFile(filepath.Join(shots, "failed.png"), png, 0o644)
			}
			text, _ := chromedp.Run(dctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
			t.Fatalf("%s: %v\npage (screenshot %s):\n%s", what, err, filepath.Join(shots, "failed.png"), text)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(browser, 10*time.Second)
		defer cancel()
		v, err := chromedp.Run(sctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	shoot := func(name string) {
		t.Helper()
		sctx, cancel := context.WithTimeout(browser, 20*time.Second)
		defer cancel()
		png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// poll waits for a JavaScript condition, asking again across page
	// loads (a click that navigates destroys the context a browser-side
	// poll runs in).
	poll := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			deadline := time.Now().Add(40 * time.Second)
			for {
				actx, cancel := context.WithTimeout(ctx, 5*time.Second)
				ok, err := chromedp.Run(actx, chromedp.Evaluate[bool](expr))
				cancel()
				if err == nil && ok {
					return nil
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					return fmt.Errorf("waited 40s for %s (last error: %v)", expr, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}

	// reloadUntil opens url until expr holds: pages that ask the other
	// nodes show what those answered at load time, and on a loaded machine
	// a node may answer late once.
	reloadUntil := func(url, expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			deadline := time.Now().Add(40 * time.Second)
			for {
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				ok, err := chromedp.Run(actx, chromedp.Evaluate[bool](expr))
				if err == nil && ok {
					cancel()
					return nil
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					cancel()
					return fmt.Errorf("waited 40s for %s on %s (last error: %v)", expr, url, err)
				}
				time.Sleep(200 * time.Millisecond)
				err = chromedp.Do(actx, chromedp.Navigate(url))
				cancel()
				if err != nil && ctx.Err() != nil {
					return err
				}
			}
		})
	}

	// Cluster: three rows, one leader; the ops chart gains live samples.
	step("open the Cluster page", chromedp.Navigate(ui(0, "/ui/cluster")),
		poll(`document.querySelectorAll('#node-table tr.node-row').length === 3`),
		poll(`document.querySelectorAll('#node-table tr[data-role="leader"]').length === 1`),
		poll(`document.querySelector('#chart-ops canvas') !== null && Number(document.getElementById('chart-ops').dataset.samples || 0) > 0`))
	before := eval(`document.getElementById('chart-ops').dataset.samples`)
	// Traffic on node 1 for its charts.
	zc1, _, err := gozk.Connect([]string{servers[0].ClientAddr()}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer zc1.Close()
	// Traffic only: a request lost to a leader change on a loaded machine
	// (no session yet, connection loss) is tried again.
	transient := func(err error) bool {
		return errors.Is(err, gozk.ErrNoServer) || errors.Is(err, gozk.ErrConnectionClosed) || errors.Is(err, gozk.ErrSessionMoved)
	}
	trafficDeadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 200; i++ {
		var err error
		if i%4 == 0 {
			_, err = zc1.Set("/app/config", []byte(`{"replicas":3,"region":"eu-west"}`), -1)
		} else {
			_, _, err = zc1.Get("/app/config")
		}
		if err != nil && transient(err) && time.Now().Before(trafficDeadline) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	step("see the live chart draw", poll(fmt.Sprintf(`Number(document.getElementById('chart-ops').dataset.samples) >= %s + 2`, before)))
	if errs := eval(`Array.from(document.querySelectorAll('#node-table td.error')).map(e => e.textContent).join('; ')`); errs != "" {
		t.Fatalf("the Cluster page could not reach a node: %s", errs)
	}
	shoot("console-cluster.png")

	// Tree: click down to /app/config and read its data as JSON.
	step("navigate the tree", chromedp.Navigate(ui(0, "/ui/tree?path=/")),
		chromedp.Click(`#children a[href$="%2fapp"]`, chromedp.NodeVisible),
		poll(`document.getElementById('node-path').textContent === '/app'`),
		chromedp.Click(`#children a[href$="%2fconfig"]`, chromedp.NodeVisible),
		poll(`document.getElementById('node-path').textContent === '/app/config'`),
		chromedp.Click(`[data-tab="json"]`, chromedp.NodeVisible),
		poll(`!document.getElementById('data-json').hidden && document.getElementById('data-json').textContent.includes('"region": "eu-west"')`))
	shoot("console-tree.png")

	// A write from the tree: the administrator edits the data, confirms,
	// and the ZooKeeper port sees it.
	step("set data from the tree", poll(`document.querySelector('form.write[data-ready]') !== null`),
		chromedp.SetValue(`form.write textarea[name="data"]`, `{"replicas":5}`, chromedp.NodeVisible),
		chromedp.Click("#set-data", chromedp.NodeVisible),
		poll(`document.querySelector('#confirm-box form[data-ready]') !== null`),
		chromedp.Click("#confirm-yes", chromedp.NodeVisible),
		reloadUntil(ui(0, "/ui/tree?path=/app/config"), `document.getElementById('data-text') !== null && document.getElementById('data-text').textContent === '{"replicas":5}'`))
	if _, err := zc.Sync("/app/config"); err != nil { // zc is on node 2
		t.Fatal(err)
	}
	if data, _, err := zc.Get("/app/config"); err != nil || string(data) != `{"replicas":5}` {
		t.Fatalf("the console's set data, seen on the ZooKeeper port: %q %v", data, err)
	}

	// Sessions: the client of node 2 is listed on node 1 with its address
	// and ephemeral; expiring it (confirmed) deletes the ephemeral.
	row := fmt.Sprintf("#s-0x%x", uint64(sid))
	step("open the Sessions page", chromedp.Navigate(ui(0, "/ui/sessions")),
		reloadUntil(ui(0, "/ui/sessions"), fmt.Sprintf(`document.querySelector('%s').textContent.includes('/app/workers/worker-1') && document.querySelector('%s').textContent.includes('127.0.0.1:')`, row, row)))
	shoot("console-sessions.png")
	step("expire the session", poll(fmt.Sprintf(`document.querySelector('%s form[data-ready]') !== null`, row)),
		chromedp.Click(row+" button.expire", chromedp.NodeVisible),
		poll(`document.querySelector('#confirm-box form[data-ready]') !== null`),
		chromedp.Click("#confirm-yes", chromedp.NodeVisible),
		// The result shows, then the page reloads without the session.
		poll(fmt.Sprintf(`document.getElementById('result-error') !== null || (document.readyState === 'complete' && document.getElementById('sessions') !== null && document.querySelector('%s') === null)`, row)))
	if msg := eval(`(document.getElementById('result-error') || {}).textContent || ''`); msg != "" {
		t.Fatalf("expire: %s", msg)
	}
	step("watch its ephemeral vanish",
		chromedp.Navigate(ui(0, "/ui/tree?path=/app/workers")),
		reloadUntil(ui(0, "/ui/tree?path=/app/workers"), `document.getElementById('stat') !== null && !document.body.textContent.includes('worker-1')`))
	if ok, _, err := zc.Exists("/app/workers/worker-1"); err == nil && ok {
		t.Fatal("the ephemeral is still there for the ZooKeeper port")
	}

	// Bridge: the lease with its member, the feed subscriber, the counter.
	lease := fmt.Sprintf("0x%x", uint64(reg.Lease.Id))
	step("open the Bridge page", chromedp.Navigate(ui(0, "/ui/bridge")),
		reloadUntil(ui(0, "/ui/bridge"), fmt.Sprintf(`document.getElementById('leases').textContent.includes('%s') && document.getElementById('leases').textContent.includes('/fleet/ids/server-1')`+
			` && document.getElementById('subscribers').textContent.includes('/app')`+
			` && document.getElementById('policies').textContent.includes('/fleet') && document.getElementById('policies').textContent.includes('native')`+
			` && document.getElementById('counters').textContent.includes('/ids/orders') && document.getElementById('counters').textContent.includes('100')`, lease)))
	shoot("console-bridge.png")

	// Tenants: a tenant on all three nodes (no client port of its own here:
	// the nodes share 127.0.0.1, so each serves it on a port of its own
	// choosing) with a few znodes, listed with its leader and replicas; its
	// tree is the tenant's, not the default tenant's.
	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer tcancel()
	if _, err := servers[0].CreateTenant(tctx, TenantRequest{Name: "kafka-a", MaxZnodes: 100000}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "node 1 serving tenant kafka-a", func() bool {
		return servers[0].Tenant("kafka-a") != nil && servers[0].Tenant("kafka-a").Serving()
	})
	tz, _, err := gozk.Connect([]string{servers[0].TenantAddr("kafka-a")}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer tz.Close()
	for _, p := range []string{"/brokers", "/brokers/ids", "/brokers/ids/0", "/brokers/ids/1", "/brokers/topics", "/controller_epoch"} {
		if _, err := tz.Create(p, []byte("{}"), 0, gozk.WorldACL(gozk.PermAll)); err != nil {
			t.Fatalf("create %s in the tenant: %v", p, err)
		}
	}
	step("open the Tenants page", chromedp.Navigate(ui(0, "/ui/tenants")),
		reloadUntil(ui(0, "/ui/tenants"), `document.querySelector('#t-kafka-a') !== null && document.querySelector('#t-kafka-a').textContent.includes('1, 2, 3')`+
			` && !document.querySelector('#t-kafka-a td:nth-child(5)').textContent.includes('—')`))
	shoot("console-tenants.png")
	step("open the tenant's tree", chromedp.Click(`#t-kafka-a a[href^="/ui/tree"]`, chromedp.NodeVisible),
		poll(`document.getElementById('tenant').textContent === 'kafka-a' && document.querySelector('#children a[href*="brokers"]') !== null`),
		chromedp.Click(`#children a[href*="brokers"]`, chromedp.NodeVisible),
		poll(`document.getElementById('node-path').textContent === '/brokers' && document.querySelector('#children a[href*="tenant=kafka-a"]') !== null`))
	shoot("console-tenant-tree.png")
	t.Logf("screenshots in %s", shots)
}
