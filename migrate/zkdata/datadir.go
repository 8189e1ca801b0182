package zkdata

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// LogFile is one log.<zxid hex> file; Zxid is the first zxid it may hold.
type LogFile struct {
	Path string
	Zxid int64
}

// SnapFile is one snapshot.<zxid hex>[.gz|.snappy] file. Zxid is the last
// zxid applied when ZooKeeper began writing it (the snapshot is fuzzy:
// replay the logs from Zxid+1).
type SnapFile struct {
	Path        string
	Zxid        int64
	Compression string // "", "gz" or "snappy"
}

// DataDir is a ZooKeeper data directory pair (dataDir and dataLogDir).
type DataDir struct {
	SnapDir   string // the version-2 directory holding snapshots
	LogDir    string // the version-2 directory holding logs
	Snapshots []SnapFile
	Logs      []LogFile
}

// versionDir returns dir/version-2 when it exists, else dir itself.
func versionDir(dir string) string {
	if st, err := os.Stat(filepath.Join(dir, "version-2")); err == nil && st.IsDir() {
		return filepath.Join(dir, "version-2")
	}
	return dir
}

// OpenDataDir lists the snapshots of snapDir and the logs of logDir (either
// ZooKeeper's dataDir/dataLogDir or their version-2 subdirectories; logDir
// "" means snapDir), each in zxid order.
func OpenDataDir(snapDir, logDir string) (*DataDir, error) {
	if logDir == "" {
		logDir = snapDir
	}
	d := &DataDir{SnapDir: versionDir(snapDir), LogDir: versionDir(logDir)}
	var err error
	if d.Logs, err = listFiles(d.LogDir, "log"); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(d.SnapDir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, "snapshot.") {
			continue
		}
		parts := strings.Split(name, ".")
		comp := ""
		switch {
		case len(parts) == 3 && (parts[2] == "gz" || parts[2] == "snappy"):
			comp = parts[2]
		case len(parts) != 2:
			continue
		}
		z, err := strconv.ParseInt(parts[1], 16, 64)
		if err != nil {
			continue
		}
		d.Snapshots = append(d.Snapshots, SnapFile{Path: filepath.Join(d.SnapDir, name), Zxid: z, Compression: comp})
	}
	sort.SliceStable(d.Snapshots, func(i, j int) bool { return d.Snapshots[i].Zxid < d.Snapshots[j].Zxid })
	if len(d.Snapshots) == 0 && len(d.Logs) == 0 {
		return nil, fmt.Errorf("%s: no ZooKeeper snapshots or logs", snapDir)
	}
	return d, nil
}

// LatestSnapshot returns the newest snapshot, if any. (ZooKeeper falls back
// to an older one when the newest does not verify; so can a caller.)
func (d *DataDir) LatestSnapshot() (SnapFile, bool) {
	if len(d.Snapshots) == 0 {
		return SnapFile{}, false
	}
	return d.Snapshots[len(d.Snapshots)-1], true
}

// NewLogReader reads the directory's transactions with zxid >= fromZxid.
func (d *DataDir) NewLogReader(fromZxid int64) *LogReader {
	return NewLogReaderFiles(SelectLogs(d.Logs, fromZxid), fromZxid)
}

func listFiles(dir, prefix string) ([]LogFile, error) {
	dir = versionDir(dir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []LogFile
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, prefix+".") {
			continue
		}
		z, err := strconv.ParseInt(strings.TrimPrefix(name, prefix+"."), 16, 64)
		if err != nil {
			continue
		}
		out = append(out, LogFile{Path: filepath.Join(dir, name), Zxid: z})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Zxid < out[j].Zxid })
	return out, nil
}
