package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// consolePageTimes loads each page n times and returns the median and the
// slowest, in ms (server-rendered HTML: what the browser waits for before
// its cached, embedded assets).
func consolePageTimes(t *testing.T, adminAddr, path string, n int) (median, worst float64) {
	t.Helper()
	var ds []float64
	for i := 0; i < n; i++ {
		start := time.Now()
		resp, err := http.Get("http://" + adminAddr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		ds = append(ds, float64(time.Since(start).Microseconds())/1000)
	}
	sort.Float64s(ds)
	return ds[len(ds)/2], ds[len(ds)-1]
}

// The console's pages load in under 200 ms on a 100k-znode tree, and a
// node with many children (ZKBRIDGE_CONSOLE_WIDE, default 1,000,000) is
// listed a page at a time without holding up the page or the server.
// It builds large trees, so it runs only when ZKBRIDGE_CONSOLE_BENCH is
// set (`make console-bench`).
func TestConsolePageLoadOnLargeTrees(t *testing.T) {
	if os.Getenv("ZKBRIDGE_CONSOLE_BENCH") == "" {
		t.Skip("set ZKBRIDGE_CONSOLE_BENCH=1 (make console-bench) to build a 100k-znode tree and a wide node and time the console")
	}
	wide := 1_000_000
	if v := os.Getenv("ZKBRIDGE_CONSOLE_WIDE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("ZKBRIDGE_CONSOLE_WIDE=%q: %v", v, err)
		}
		wide = n
	}
	s := startTestServer(t, withConsole(false))
	start := time.Now()
	fillChildren(t, s, "/bench", 100)
	for d := 0; d < 100; d++ {
		fillChildren(t, s, fmt.Sprintf("/bench/c%06d", d), 1000)
	}
	t.Logf("built a 100k-znode tree in %v", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	fillChildren(t, s, "/wide", wide)
	t.Logf("built a node with %d children in %v", wide, time.Since(start).Round(time.Millisecond))

	admin := s.AdminAddr()
	pages := []string{
		"/ui/cluster", "/ui/cluster/nodes", "/ui/tree?path=/", "/ui/tree?path=/bench",
		"/ui/tree?path=/bench/c000050", "/ui/tree?path=/bench/c000050/c000500",
		"/ui/tree?path=/&q=/bench/c00005", "/ui/sessions", "/ui/bridge",
		"/ui/tree?path=/wide", "/ui/tree/children?path=/wide&after=c500000",
		"/ui/tree?path=/&q=/wide/c99999",
	}
	for _, p := range pages {
		median, worst := consolePageTimes(t, admin, p, 20)
		t.Logf("%-45s median %7.2f ms  max %7.2f ms", p, median, worst)
		if median > 200 {
			t.Errorf("%s: median %.1f ms, over 200 ms", p, median)
		}
	}

	// The same pages in headless Chromium: navigation start to the load
	// event (HTML, the embedded scripts and styles from the browser's
	// cache after the first page, scripts run), as a user waits for it.
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: run make deps")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer stopAlloc()
	browser, stopBrowser := chromedp.NewContext(alloc)
	defer stopBrowser()
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	for _, p := range []string{"/ui/cluster", "/ui/tree?path=/bench/c000050", "/ui/tree?path=/wide", "/ui/sessions", "/ui/bridge"} {
		var ds []float64
		for i := 0; i < 6; i++ {
			ctx, cancel := context.WithTimeout(browser, 30*time.Second)
			err := chromedp.Do(ctx, chromedp.Navigate("http://"+admin+p))
			var ms float64
			if err == nil {
				ms, err = chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByType('navigation')[0].loadEventEnd`))
			}
			cancel()
			if err != nil {
				t.Fatalf("load %s in chromium: %v", p, err)
			}
			if i > 0 { // the first load fills the cache
				ds = append(ds, ms)
			}
		}
		sort.Float64s(ds)
		t.Logf("chromium %-36s median %7.2f ms  max %7.2f ms", p, ds[len(ds)/2], ds[len(ds)-1])
		if ds[len(ds)/2] > 200 {
			t.Errorf("%s in chromium: median %.1f ms, over 200 ms", p, ds[len(ds)/2])
		}
	}
}
