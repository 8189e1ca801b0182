package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigIsTheEmbeddedSingleNode(t *testing.T) {
	c := DefaultConfig()
	if c.ClientAddr != "127.0.0.1:2181" || c.DataDir != "zkbridge-data" || c.AdminAddr != "127.0.0.1:8080" {
		t.Fatalf("defaults %+v", c)
	}
	if c.MinSessionTimeout != 4*time.Second || c.MaxSessionTimeout != 40*time.Second {
		t.Fatalf("session bounds %v..%v, want 2x and 20x tickTime", c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	if !c.FourLetterWordEnabled("srvr") || c.FourLetterWordEnabled("mntr") {
		t.Fatal("default whitelist must be srvr only, as ZooKeeper")
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestZooCfgAcceptedAsIs(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "# a ZooKeeper config\n" +
		"tickTime=1000\n" +
		"initLimit=10\nautopurge.purgeInterval=1\n" +
		"syncLimit=5\n" +
		"dataDir=" + data + "\n" +
		"dataLogDir=logs\n" +
		"clientPort=2999\n" +
		"minSessionTimeout=-1\n" +
		"maxSessionTimeout=60000\n" +
		"4lw.commands.whitelist=srvr, mntr ,ruok\n" +
		"maxClientCnxns=10\n" +
		"jute.maxbuffer=2000000\n" +
		"globalOutstandingLimit=500\n" +
		"admin.serverPort=9090\n" +
		"znode.container.checkIntervalMs=1000\n" +
		"snapCount=50000\nsnapSizeLimitInKb=65536\n" +
		"server.3=127.0.0.1:2888:3888\n" +
		"frobnicate=yes\n"
	path := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c.Normalize()
	checks := []struct {
		name string
		ok   bool
	}{
		{"tickTime", c.TickTime == time.Second},
		{"dataDir", c.DataDir == data},
		{"dataLogDir relative to the file", c.DataLogDir == filepath.Join(dir, "logs")},
		{"clientPort", c.ClientAddr == "127.0.0.1:2999"},
		{"minSessionTimeout -1 means 2x tick", c.MinSessionTimeout == 2*time.Second},
		{"maxSessionTimeout", c.MaxSessionTimeout == time.Minute},
		{"whitelist", strings.Join(c.FourLetterWords, ",") == "srvr,mntr,ruok"},
		{"maxClientCnxns", c.MaxClientCnxns == 10},
		{"jute.maxbuffer", c.MaxBuffer == 2000000},
		{"globalOutstandingLimit", c.GlobalOutstandingLimit == 500},
		{"admin port", c.AdminAddr == "127.0.0.1:9090"},
		{"reaper", c.ReaperInterval == time.Second},
		{"snapCount", c.SnapshotEntries == 50000},
		{"snapSizeLimitInKb", c.SnapshotBytes == 64<<20},
		{"myid", c.ReplicaID == 3},
		{"peer from server.3", c.PeerAddr == "127.0.0.1:2888"},
		{"initLimit (for conf)", c.InitLimit == 10},
		{"the Raft log is synced by default", !c.LogSyncDisabled},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s not taken from zoo.cfg: %+v", ch.name, c)
		}
	}
	warned := strings.Join(c.Warnings, "\n")
	if !strings.Contains(warned, "frobnicate") || !strings.Contains(warned, "autopurge.purgeInterval") || strings.Contains(warned, "initLimit") {
		t.Errorf("unknown and unused keys must warn, got:\n%s", warned)
	}
}

// ZooKeeper skips its txn log's fsync only for forceSync exactly "no"
// (FileTxnLog); any other value keeps it, as no value does.
func TestZooCfgForceSync(t *testing.T) {
	for cfg, disabled := range map[string]bool{
		"":                              false,
		"forceSync=yes\n":               false,
		"forceSync=no\n":                true,
		"forceSync=NO\n":                false,
		"forceSync=false\n":             false,
		"zookeeper.forceSync=no\n":      true,
		"forceSync=no\nforceSync=yes\n": false, // the last value wins, as in Java properties
	} {
		c, err := ParseZooCfg([]byte("dataDir=d\n"+cfg), t.TempDir())
		if err != nil {
			t.Fatalf("%q: %v", cfg, err)
		}
		if c.LogSyncDisabled != disabled {
			t.Errorf("%q: log sync disabled %v, want %v", cfg, c.LogSyncDisabled, disabled)
		}
		if strings.Contains(strings.Join(c.Warnings, "\n"), "forceSync") {
			t.Errorf("%q: forceSync warned as unknown: %v", cfg, c.Warnings)
		}
	}
}

func TestZooCfgRejectsWhatCannotWork(t *testing.T) {
	for name, cfg := range map[string]string{
		"not key=value":        "tickTime 2000\n",
		"bad number":           "tickTime=two\n",
		"bad server id":        "server.x=127.0.0.1:2888:3888\n",
		"cluster without myid": "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\nserver.3=127.0.0.1:2890:3890\n",
		"only an observer":     "server.1=127.0.0.1:2888:3888:observer\n",
		"unknown role":         "server.1=127.0.0.1:2888:3888:witness\n",
	} {
		if _, err := ParseZooCfg([]byte(cfg), t.TempDir()); err == nil {
			t.Errorf("%s: accepted %q", name, cfg)
		}
	}
}

func TestZooCfgObserverAndModes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "myid"), []byte("4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "dataDir=" + dir + "\nreconfigEnabled=true\nreadonlymode.enabled=true\n" +
		"server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889:participant\nserver.3=127.0.0.1:2890:3890;2183\n" +
		"server.4=127.0.0.1:2891:3891:observer;127.0.0.1:2184\n"
	c, err := ParseZooCfg([]byte(cfg), dir)
	if err != nil {
		t.Fatal(err)
	}
	c.Normalize()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !c.Observer || c.PeerAddr != "127.0.0.1:2891" || len(c.Peers) != 3 || c.Observers[4] != "127.0.0.1:2891" {
		t.Fatalf("observer config: observer=%v peer=%s peers=%v observers=%v", c.Observer, c.PeerAddr, c.Peers, c.Observers)
	}
	if !c.ReconfigEnabled || !c.ReadOnlyMode {
		t.Fatalf("reconfigEnabled %v, readonlymode.enabled %v", c.ReconfigEnabled, c.ReadOnlyMode)
	}
}

func TestYAMLConfigAndDetection(t *testing.T) {
	dir := t.TempDir()
	y := filepath.Join(dir, "node.yaml")
	if err := os.WriteFile(y, []byte("client_addr: 127.0.0.1:3000\ntick_time: 500ms\nfour_letter_words: ['*']\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfigFile(y)
	if err != nil {
		t.Fatal(err)
	}
	if c.ClientAddr != "127.0.0.1:3000" || c.TickTime != 500*time.Millisecond || !c.FourLetterWordEnabled("dump") {
		t.Fatalf("yaml %+v", c)
	}
	bad := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(bad, []byte("clinet_addr: 127.0.0.1:3000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfigFile(bad); err == nil {
		t.Fatal("a misspelt YAML key must be an error")
	}
	// No extension: content decides.
	noext := filepath.Join(dir, "config")
	if err := os.WriteFile(noext, []byte("# zoo\nclientPort=3001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadConfigFile(noext); err != nil || c.ClientAddr != "127.0.0.1:3001" {
		t.Fatalf("zoo.cfg without extension: %+v, %v", c, err)
	}
}

func TestValidate(t *testing.T) {
	c := DefaultConfig()
	c.MinSessionTimeout, c.MaxSessionTimeout = 10*time.Second, time.Second
	if c.Validate() == nil {
		t.Fatal("min > max accepted")
	}
	c = DefaultConfig()
	c.ClientAddr = "nonsense"
	if c.Validate() == nil {
		t.Fatal("bad client address accepted")
	}
	c = DefaultConfig()
	if c.ElectionTimeout != DefaultElectionTimeout || c.Validate() != nil {
		t.Fatalf("default election timeout %v not valid", c.ElectionTimeout)
	}
	c.ElectionTimeout = 59 * time.Millisecond
	if c.Validate() == nil {
		t.Fatal("59ms election timeout accepted (dragonboat needs more than 2 heartbeats of a 20 ms tick)")
	}
	c.ElectionTimeout = 60 * time.Millisecond
	if err := c.Validate(); err != nil {
		t.Fatalf("60ms election timeout (3 ticks): %v", err)
	}
}

func TestZooCfgCluster(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "myid"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "dataDir=" + dir + "\nclientPort=2181\n" +
		"server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889;2182\nserver.3=127.0.0.1:2890:3890:participant\n"
	c, err := ParseZooCfg([]byte(cfg), dir)
	if err != nil {
		t.Fatal(err)
	}
	c.Normalize()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ReplicaID != 2 || c.PeerAddr != "127.0.0.1:2889" || len(c.Peers) != 3 || c.Peers[3] != "127.0.0.1:2890" {
		t.Fatalf("cluster config %+v", c)
	}
	c.ReplicaID = 9
	if c.Validate() == nil {
		t.Fatal("a replica id outside the peers must be refused")
	}
}
