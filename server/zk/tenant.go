package zk

// Requests is how many requests this door has received since it started
// (a tenant's ops/s in `tenant list`).
func (s *Server) Requests() int64 { return s.metrics.packetsReceived.Load() }
