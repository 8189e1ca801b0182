// Package migrate will move data from a running ZooKeeper ensemble into
// zkbridge: export (an online tree walk: data, stat, ACLs), import (bulk
// load preserving zxids, versions and sequential counters), validate
// (byte-compare both trees), live (re-scan differences until quiet) and
// convert (offline, from ZooKeeper's snapshot and transaction-log files).
package migrate
