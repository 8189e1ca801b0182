package bench

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseMix(t *testing.T) {
	m, err := ParseMix("get:45, list:45,set:8,create:1,delete:1")
	if err != nil {
		t.Fatal(err)
	}
	want := Mix{OpGet: 45, OpList: 45, OpSet: 8, OpCreate: 1, OpDelete: 1}
	if m != want {
		t.Fatalf("got %v, want %v", m, want)
	}
	if m.total() != 100 {
		t.Fatalf("total %d", m.total())
	}
	if got := m.String(); got != "create:1,delete:1,set:8,get:45,list:45" {
		t.Fatalf("String() = %q", got)
	}
	// pick covers [0,total) in op order, each op as often as its weight.
	var counts Mix
	for r := range m.total() {
		counts[m.pick(r)]++
	}
	if counts != m {
		t.Fatalf("pick distribution %v, want %v", counts, m)
	}
	if z, err := ParseMix("exists:0,multi:3"); err != nil || z != (Mix{OpMulti: 3}) {
		t.Fatalf("zero weight: %v %v", z, err)
	}

	for _, tc := range []struct{ in, wantErr string }{
		{"", "not OP:WEIGHT"},
		{"get", "not OP:WEIGHT"},
		{"get:1,", "not OP:WEIGHT"},
		{":3", "not OP:WEIGHT"},
		{"read:3", `unknown op "read"`},
		{"watch:1", `unknown op "watch"`},
		{"get:1,get:2", "given twice"},
		{"get:-1", "integer in 0…1000000"},
		{"get:x", "integer in 0…1000000"},
		{"get:1.5", "integer in 0…1000000"},
		{"get:0,set:0", "every weight is 0"},
	} {
		if _, err := ParseMix(tc.in); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseMix(%q) = %v, want an error containing %q", tc.in, err, tc.wantErr)
		}
	}
}

func TestValidate(t *testing.T) {
	base := func() Config {
		c := Config{Addrs: []string{"127.0.0.1:2181"}, Workload: "get"}
		c.Normalize()
		return c
	}
	if c := base(); c.Validate() != nil {
		t.Fatalf("defaults: %v", c.Validate())
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"no addr", func(c *Config) { c.Addrs = nil }, "no server address"},
		{"bad addr", func(c *Config) { c.Addrs = []string{"localhost"} }, "not HOST:PORT"},
		{"bad port", func(c *Config) { c.Addrs = []string{"127.0.0.1:99999"} }, "bad port"},
		{"workload", func(c *Config) { c.Workload = "read" }, "unknown workload"},
		{"connections", func(c *Config) { c.Connections = -1 }, "connections"},
		{"outstanding", func(c *Config) { c.Outstanding = -1 }, "outstanding"},
		{"payload", func(c *Config) { c.Payload = 2 << 20 }, "payload"},
		{"fanout", func(c *Config) { c.Fanout = c.Keyspace + 1 }, "fanout"},
		{"multi", func(c *Config) { c.MultiOps = 5000 }, "multi-ops"},
		{"duration", func(c *Config) { c.Duration = -time.Second }, "duration"},
		{"root", func(c *Config) { c.Root = "bench" }, "root"},
		{"root slash", func(c *Config) { c.Root = "/" }, "root"},
		{"root trailing", func(c *Config) { c.Root = "/b/" }, "root"},
		{"connect-exists", func(c *Config) { c.ConnectExists = true }, "connect workload only"},
		{"connectors", func(c *Config) { c.Workload, c.Connections = "connect", 20000 }, "connections"},
		{"rate", func(c *Config) { c.Rate = -1 }, "rate must be"},
		{"rate NaN", func(c *Config) { c.Rate = math.NaN() }, "rate must be"},
		{"rate watch", func(c *Config) { c.Workload, c.Rate = "watch", 10 }, "request/reply workloads"},
	} {
		c := base()
		tc.mutate(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestValidateConnect(t *testing.T) {
	c := Config{Addrs: []string{"127.0.0.1:2181"}, Workload: "connect", ConnectExists: true}
	c.Normalize()
	if err := c.Validate(); err != nil {
		t.Fatalf("connect with exists: %v", err)
	}
	if !slices.Contains(Workloads, "connect") {
		t.Fatalf("Workloads lacks connect: %v", Workloads)
	}
	// connect and close are not ops a mix can name.
	for _, op := range []string{"connect", "close"} {
		if _, err := ParseMix(op + ":1"); err == nil || !strings.Contains(err.Error(), "unknown op") {
			t.Errorf("ParseMix(%s:1) = %v, want unknown op", op, err)
		}
	}
}
