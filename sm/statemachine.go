package sm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/zkbridge/zkbridge/diskfull"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Default change-log retention.
const (
	DefaultChangeLogMaxRecords = 100_000
	DefaultChangeLogMaxBytes   = 64 << 20
)

// Config configures one state machine replica. Everything that influences
// apply (SuperDigest, DisableTTL, retention) must be identical on all
// replicas of a shard.
type Config struct {
	// Dir is the replica's own directory (created if missing). The live
	// Pebble DB is a subdirectory named by the CURRENT file.
	Dir string
	// SuperDigest is "super:<base64 sha1>"; a digest identity equal to it
	// bypasses all ACLs (zookeeper.DigestAuthenticationProvider.superDigest).
	SuperDigest string
	// DisableTTL makes TTL creates fail with Unimplemented, as ZooKeeper with
	// extendedTypesEnabled=false. By default TTL nodes are supported.
	DisableTTL bool
	// ChangeLogMaxRecords and ChangeLogMaxBytes bound the retained change
	// log (0 = default). Use a negative value to keep no change log.
	ChangeLogMaxRecords int64
	ChangeLogMaxBytes   int64
	// EnforceQuota fails creates and setData past a quota's hard limits
	// with QuotaExceeded (zookeeper.enforceQuota; off by default).
	EnforceQuota bool
	// Notify, if set, is called at the end of every Update, after the batch
	// is committed and before Update returns, with one Result (including
	// Events) per entry. It runs on dragonboat's apply goroutine: keep it
	// short and do not call back into Update.
	Notify func(results []*Result)
	// Pebble, if set, adjusts the Pebble options before Open (cache, memtable
	// size, logger). FormatMajorVersion is pinned by sm and must not change.
	Pebble func(*pebble.Options)
}

func (c *Config) retention() (uint64, uint64) {
	r, b := c.ChangeLogMaxRecords, c.ChangeLogMaxBytes
	if r == 0 {
		r = DefaultChangeLogMaxRecords
	}
	if b == 0 {
		b = DefaultChangeLogMaxBytes
	}
	if r < 0 {
		r = 0
	}
	if b < 0 {
		b = 0
	}
	return uint64(r), uint64(b)
}

// ErrClosed is returned by reads after Close (or before Open).
var ErrClosed = errors.New("sm: state machine is closed")

// StateMachine is the replicated znode tree: a dragonboat
// IOnDiskStateMachine over Pebble. Update, Sync, PrepareSnapshot,
// RecoverFromSnapshot and Close are driven by dragonboat (never
// concurrently with each other); the read API may be used from any
// goroutine at any time.
type StateMachine struct {
	cfg Config

	// mu guards db against swaps (RecoverFromSnapshot) and Close. Readers
	// hold it shared for the life of a View. Update uses db without the lock:
	// dragonboat never runs it concurrently with Recover or Close.
	mu     sync.RWMutex
	db     *pebble.DB
	dbName string

	applied  atomic.Uint64
	lastZxid atomic.Int64
	statsMu  sync.Mutex
	stats    TreeStats
	zxidBase int64      // touched only by the apply path
	hot      *hotCache  // likewise
	nodes    *nodeCache // likewise
	filter   *nodeFilter
	logs     logIndex     // touched only by the apply path
	txn      *txn         // Update's, reused by the next one
	children *childCache  // child listings, read side only
	readACLs readACLCache // decoded ACL lists, locked views only
}

var _ sm.IOnDiskStateMachine = (*StateMachine)(nil)

// New returns an unopened state machine; dragonboat calls Open.
func New(cfg Config) *StateMachine {
	return &StateMachine{cfg: cfg, hot: newHotCache(), nodes: newNodeCache(), filter: newNodeFilter(), children: newChildCache()}
}

// NewFactory returns a dragonboat factory. cfg maps (shard, replica) to the
// replica's Config (typically setting Dir).
func NewFactory(cfg func(shardID, replicaID uint64) Config) sm.CreateOnDiskStateMachineFunc {
	return func(shardID, replicaID uint64) sm.IOnDiskStateMachine { return New(cfg(shardID, replicaID)) }
}

// Open opens (or initialises) the DB and returns the last applied index.
func (s *StateMachine) Open(stopc <-chan struct{}) (uint64, error) {
	select {
	case <-stopc:
		return 0, sm.ErrOpenStopped
	default:
	}
	name, err := prepareDir(s.cfg.Dir)
	if err != nil {
		return 0, err
	}
	db, err := s.openDB(name)
	if err != nil {
		return 0, err
	}
	if err := s.install(db, name); err != nil {
		db.Close()
		return 0, err
	}
	return s.applied.Load(), nil
}

// install loads the metadata of db and makes it the live DB.
func (s *StateMachine) install(db *pebble.DB, name string) error {
	if err := initTree(db); err != nil {
		return err
	}
	applied, base, last, err := readMeta(db)
	if err != nil {
		return err
	}
	stats, err := readTreeStats(db)
	if err != nil {
		return err
	}
	// The change log must agree with its metadata before the node serves:
	// a damaged MANIFEST that Pebble opens anyway can drop tables, which
	// the first Update found (as an error, hence a panic mid-apply) where
	// opening should refuse. The index built here is the first Update's.
	lm, err := readRaw(db, keyLogMeta)
	if err != nil {
		return err
	}
	meta, err := decodeLogMeta(lm)
	if err != nil {
		return err
	}
	var logs logIndex
	if err := logs.load(db, &meta); err != nil {
		return err
	}
	if err := s.filter.rebuild(db); err != nil {
		return err
	}
	s.statsMu.Lock()
	s.stats = stats
	s.statsMu.Unlock()
	s.mu.Lock()
	s.db, s.dbName = db, name
	s.applied.Store(applied) // with the database (LockedView)
	s.lastZxid.Store(last)
	s.dropCaches()
	s.logs = logs
	s.mu.Unlock()
	s.zxidBase = base
	return nil
}

// dropCaches forgets what the caches hold after the database was replaced
// (open, snapshot recovery); the node filter is rebuilt from the new one
// instead.
func (s *StateMachine) dropCaches() {
	s.hot.reset()
	s.nodes.reset()
	s.logs.reset()
	s.children.reset()
	s.readACLs.reset()
}

func readMeta(r pebble.Reader) (applied uint64, base, last int64, err error) {
	v, err := readRaw(r, keyApplied)
	if err != nil {
		return 0, 0, 0, err
	}
	if v != nil {
		if len(v) != 16 {
			return 0, 0, 0, fmt.Errorf("sm: corrupt applied-index record (%d bytes)", len(v))
		}
		applied = binary.BigEndian.Uint64(v)
		last = int64(binary.BigEndian.Uint64(v[8:]))
	}
	bv, err := readRaw(r, keyZxidBase)
	if err != nil {
		return 0, 0, 0, err
	}
	return applied, decodeInt(bv), last, nil
}

// layoutVersion is the key layout this code writes. 1 had no child index;
// 2 adds it (spaceChild).
const layoutVersion = 2

// upgradeLayout brings a tree written by an older layout (a data directory
// or a snapshot from an earlier release) up to layoutVersion.
func upgradeLayout(db *pebble.DB, v []byte) error {
	if len(v) != 1 || v[0] == 0 || v[0] > layoutVersion {
		return fmt.Errorf("sm: key layout %v is not one this release reads (it writes %d); use the release that wrote this data", v, layoutVersion)
	}
	if v[0] == layoutVersion {
		return nil
	}
	// 1 → 2: one child index entry per node record.
	b := db.NewBatch()
	defer b.Close()
	err := scanKeys(db, []byte{spaceNode}, []byte{spaceNode + 1}, func(k []byte) error {
		ck := append([]byte{spaceChild}, k[1:]...)
		return b.Set(ck, nil, nil)
	})
	if err != nil {
		return fmt.Errorf("sm: building the child index: %w", err)
	}
	if err := b.Set(keySpecialVer, []byte{layoutVersion}, nil); err != nil {
		return err
	}
	if err := commitDurable(db, b); err != nil {
		return fmt.Errorf("sm: building the child index: %w", err)
	}
	return nil
}

// initTree creates the special nodes of a fresh tree: "/", "/zookeeper",
// "/zookeeper/quota" (world:anyone:cdrwa) and "/zookeeper/config"
// (world:anyone:r, aversion -1), all with zero stats and empty data.
func initTree(db *pebble.DB) error {
	v, err := readRaw(db, keySpecialVer)
	if err != nil {
		return err
	}
	if v != nil {
		return upgradeLayout(db, v)
	}
	b := db.NewIndexedBatch()
	defer b.Close()
	t := newTxn(b)
	special := []struct {
		path     string
		acl      []zkproto.ACL
		children int32
		aversion int32
	}{
		{"/", openACL, 1, 0},
		{zkproto.ZooKeeperPath, openACL, 2, 0},
		{zkproto.QuotaPath, openACL, 0, 0},
		{zkproto.ConfigPath, readACL, 0, -1},
	}
	for _, sp := range special {
		id, err := t.aclRef(sp.acl)
		if err != nil {
			return err
		}
		t.putNode(sp.path, &nodeRec{aclID: id, data: []byte{}, numChildren: sp.children, aversion: sp.aversion})
	}
	t.set(keySpecialVer, []byte{layoutVersion})
	t.commit()
	if err := t.flush(); err != nil {
		return err
	}
	if err := commitDurable(db, b); err != nil {
		return fmt.Errorf("sm: init tree: %w", err)
	}
	return nil
}

// newUpdateBatch is the indexed batch of an Update, sized up front when its
// entries are large: a batch grows by doubling, copying what it holds, and
// under 1 MB sets those copies were a twentieth of a node's CPU. The
// entries' commands bound what the Update writes but for a few keys of
// bookkeeping each (the change-log record, the session, the child index).
func newUpdateBatch(db *pebble.DB, ents []sm.Entry) *pebble.Batch {
	size := 0
	for i := range ents {
		size += len(ents[i].Cmd) + 512
	}
	if size < 1<<16 {
		return db.NewIndexedBatch()
	}
	return db.NewIndexedBatchWithSize(size)
}

// Update applies entries in one indexed Pebble batch that also records the
// applied index, committed without fsync (Sync makes it durable).
func (s *StateMachine) Update(ents []sm.Entry) ([]sm.Entry, error) {
	if len(ents) == 0 {
		return ents, nil
	}
	db := s.db
	if db == nil {
		return nil, ErrClosed
	}
	b := newUpdateBatch(db, ents)
	defer b.Close()
	meta := s.logs.meta // the last Update's, while the index is loaded
	if !s.logs.loaded {
		lm, err := readRaw(b, keyLogMeta)
		if err != nil {
			return nil, err
		}
		if meta, err = decodeLogMeta(lm); err != nil {
			return nil, err
		}
	}
	applied := false
	defer func() {
		if !applied { // the index may hold records the DB never got
			s.logs.reset()
		}
	}()
	if err := s.logs.load(b, &meta); err != nil {
		return nil, err
	}
	if s.txn == nil {
		s.txn = newTxn(b)
	} else {
		s.txn.rebind(b)
	}
	a := &applier{cfg: &s.cfg, t: s.txn, zxidBase: s.zxidBase}
	a.t.hot, a.t.filter, a.t.cache = s.hot, s.filter, s.nodes
	defer s.hot.discard() // a no-op once published
	defer s.filter.discard()
	results := make([]*Result, len(ents))
	lastZxid := s.lastZxid.Load()
	stats := s.Stats()
	for i := range ents {
		e := &ents[i]
		a.before = stats
		res, err := s.applyEntry(a, e, &meta)
		if err != nil {
			return nil, err
		}
		a.t.commit()
		results[i] = res
		lastZxid = res.Zxid
		stats.plus(a.sizes)
		e.Result = sm.Result{Value: uint64(res.Zxid), Data: res.Encode()}
	}
	if err := a.t.flush(); err != nil {
		return nil, fmt.Errorf("sm: entries %d..%d: %w", ents[0].Index, ents[len(ents)-1].Index, err)
	}
	maxRec, maxBytes := s.cfg.retention()
	if err := s.logs.trim(b, &meta, maxRec, maxBytes); err != nil {
		return nil, err
	}
	if err := b.Set(keyLogMeta, meta.encode(), nil); err != nil {
		return nil, err
	}
	if err := b.Set(keyTreeStats, stats.encode(), nil); err != nil {
		return nil, err
	}
	last := ents[len(ents)-1].Index
	appliedRec := binary.BigEndian.AppendUint64(nil, last)
	appliedRec = binary.BigEndian.AppendUint64(appliedRec, uint64(lastZxid))
	if err := b.Set(keyApplied, appliedRec, nil); err != nil {
		return nil, err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return nil, fmt.Errorf("sm: commit entries %d..%d: %w", ents[0].Index, last, err)
	}
	applied = true
	s.logs.meta = meta
	s.hot.publish()
	s.nodes.publish(a.t.written)
	s.filter.publish()
	s.zxidBase = a.zxidBase
	s.statsMu.Lock()
	s.stats = stats
	s.statsMu.Unlock()
	s.applied.Store(last)
	s.lastZxid.Store(lastZxid)
	if s.cfg.Notify != nil {
		s.cfg.Notify(results)
	}
	return ents, nil
}

// applyEntry decodes and applies one entry into a's overlay and appends its
// change-log record. An unknown command version is an error (the replica
// must not silently diverge); any other undecodable command is a
// deterministic MarshallingError result.
func (s *StateMachine) applyEntry(a *applier, e *sm.Entry, meta *logMeta) (*Result, error) {
	a.index = e.Index
	a.zxid = a.zxidBase + int64(e.Index)
	// The changes are encoded below and dropped, so their slice serves the
	// next entry; the events go out with the result and are the entry's own.
	clear(a.changes)
	a.events, a.changes, a.sizes, a.fenced = nil, a.changes[:0], TreeStats{}, false
	if len(e.Cmd) == 0 {
		return &Result{Index: e.Index, Zxid: a.zxid}, nil
	}
	cmd, err := DecodeCommand(e.Cmd)
	if errors.Is(err, ErrUnknownCommandVersion) {
		return nil, fmt.Errorf("sm: entry %d: %w", e.Index, err)
	}
	if err != nil {
		return &Result{Index: e.Index, Zxid: a.zxid, Err: zkproto.ErrMarshallingError}, nil
	}
	a.hdr = &cmd.Header
	res, err := a.applyCommand(cmd)
	if err != nil {
		return nil, err
	}
	res.Fenced = a.fenced
	if len(a.changes) > 0 {
		rec := (&ChangeRecord{Zxid: res.Zxid, Time: cmd.Time, Changes: a.changes}).encode()
		a.t.set(logKey(res.Zxid), rec)
		s.logs.push(res.Zxid, len(rec))
		meta.Count++
		meta.Bytes += uint64(len(rec))
	}
	return res, nil
}

// Sync makes every committed Update durable (flushes the memtables: the
// state keeps no WAL of its own, see openDB).
// It may also be called by the server on shutdown, concurrently with
// dragonboat closing the replica, hence the lock.
func (s *StateMachine) Sync() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	db := s.db
	if db == nil {
		return ErrClosed
	}
	if err := durable(db); err != nil {
		return fmt.Errorf("sm: sync: %w", err)
	}
	return nil
}

// Close closes the DB. Reads afterwards return ErrClosed.
func (s *StateMachine) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	// A clean stop flushes what was applied since the last Sync, so the
	// restart does not replay it from the Raft log. Not on a full disk,
	// where a flush would wait for space: the replay covers it.
	if !diskfull.Full() {
		if err := durable(s.db); err != nil {
			s.db.Close()
			s.db = nil
			return fmt.Errorf("sm: close: flush: %w", err)
		}
	}
	err := s.db.Close()
	s.db = nil
	if err != nil {
		return fmt.Errorf("sm: close: %w", err)
	}
	return nil
}

// AppliedIndex is the last applied Raft index.
func (s *StateMachine) AppliedIndex() uint64 { return s.applied.Load() }

// LastZxid is the zxid of the last applied entry (what a read reply
// header carries).
func (s *StateMachine) LastZxid() int64 { return s.lastZxid.Load() }
