package native

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/wallclock"
	"github.com/zkbridge/zkbridge/zkproto"
)

// A lease is a session without a TCP connection: the same replicated
// record, expiry, ephemerals index, dump and getEphemerals as a ZooKeeper
// client's session. A Heartbeat touches it on the node that receives it and
// is acknowledged once the leader knows of the renewal (a follower proposes
// it and waits for it to apply); the leader
// expires it past its TTL, deleting its znodes (ZooKeeper watches fire, the
// change log records the deletes). A new leader grants every session, so
// every lease, a full TTL.

// segment is what a group or member id may be: one path segment.
var segment = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// Fluss's znodes (ZkData.java, Fluss main 2026-08; root /fluss by
// default): members register under ids/, the elected coordinator holds
// coordinators/active and fences with the ASCII integer at
// coordinators/epoch, which starts at -1 and each new leader increments.
const (
	flussActive = "/fluss/coordinators/active"
	flussEpoch  = "/fluss/coordinators/epoch"
)

// registration is where a Register puts its member.
type registration struct {
	path string
	// leader: the Fluss coordinator election (coordinator-leader).
	leader bool
}

// versionedJSON checks a Fluss payload: JSON with a "version" field.
func versionedJSON(payload []byte, what, example string) error {
	var reg struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(payload, &reg); err != nil || reg.Version == nil {
		return fmt.Errorf("a Fluss %s is JSON with a \"version\" (e.g. %s)", what, example)
	}
	return nil
}

// registrationPath maps a profile, group and member to the znode a
// registration creates, and checks its payload.
func registrationPath(profile, group, member string, payload []byte) (registration, error) {
	if !segment.MatchString(member) || member == "." || member == ".." {
		return registration{}, fmt.Errorf("member_id %q is not one path segment of letters, digits, '.', '_', ':' or '-'", member)
	}
	switch profile {
	case "", "generic":
		if !segment.MatchString(group) || group == "." || group == ".." || group == "zookeeper" {
			return registration{}, fmt.Errorf("group %q is not one path segment of letters, digits, '.', '_', ':' or '-' (and not zookeeper)", group)
		}
		return registration{path: "/" + group + "/ids/" + member}, nil
	case "fluss":
		const address = `{"version":2,"id":"…","listeners":"CLIENT://host:9123,FLUSS://host:9124"}`
		switch group {
		case "tabletservers":
			for _, c := range member {
				if c < '0' || c > '9' {
					return registration{}, fmt.Errorf("a Fluss tablet server id is an integer, not %q", member)
				}
			}
			if err := versionedJSON(payload, "tablet server registration (TabletServerRegistration)", `{"version":4,"listeners":"FLUSS://host:9123","register_timestamp":…}`); err != nil {
				return registration{}, err
			}
			return registration{path: "/fluss/tabletservers/ids/" + member}, nil
		case "coordinators":
			if err := versionedJSON(payload, "coordinator registration (CoordinatorAddress)", address); err != nil {
				return registration{}, err
			}
			return registration{path: "/fluss/coordinators/ids/" + member}, nil
		case "coordinator-leader":
			if err := versionedJSON(payload, "coordinator address (CoordinatorAddress)", address); err != nil {
				return registration{}, err
			}
			return registration{path: flussActive, leader: true}, nil
		}
		return registration{}, fmt.Errorf("profile fluss registers groups tabletservers, coordinators and coordinator-leader, not %q", group)
	}
	return registration{}, fmt.Errorf("unknown profile %q (generic or fluss)", profile)
}

// Register adds a member: an ephemeral znode owned by a new lease.
func (s *Server) Register(ctx context.Context, r *zkbridgev1.RegisterRequest) (*zkbridgev1.RegisterResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	reg, err := registrationPath(r.Profile, r.Group, r.MemberId, r.Payload)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "register: %v", err)
	}
	path := reg.path
	if r.LeaseTtlMs <= 0 {
		return nil, status.Errorf(codes.InvalidArgument, "register %s: lease_ttl_ms %d (want a positive TTL)", path, r.LeaseTtlMs)
	}
	if len(r.Payload) > s.cfg.MaxBuffer {
		return nil, status.Errorf(codes.InvalidArgument, "register %s: %d bytes of payload, more than jute.maxbuffer (%d)", path, len(r.Payload), s.cfg.MaxBuffer)
	}
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.ensureParents(path); err != nil {
		return nil, err
	}
	if err := s.checkHolder(ctx, path, r.ExpectedEpoch); err != nil {
		return nil, err
	}
	if err := s.admitSession(path); err != nil {
		return nil, err
	}
	ttl := s.node.NegotiateTimeout(int32(min(r.LeaseTtlMs, 1<<31-1)))
	token := make([]byte, zkproto.PasswordLength)
	if _, err := rand.Read(token); err != nil {
		return nil, status.Errorf(codes.Internal, "register %s: no randomness for a lease token: %v", path, err)
	}
	conn := randomID()
	id, err := s.node.CreateSession(conn, ttl, token)
	if err != nil {
		return nil, codeOf("register (lease)", path, err)
	}
	var czxid, coordEpoch int64
	var seq uint64
	if reg.leader {
		czxid, coordEpoch, seq, err = s.electCoordinator(ctx, id, conn, r.Payload)
	} else {
		seq = 1
		var res *sm.Result
		op, limited := s.limited(&sm.Create{OpCode: zkproto.OpCreate2, Path: path, Data: r.Payload, ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeEphemeral)})
		res, err = s.node.ProposeSync(&sm.Command{
			Header: sm.Header{Session: id, Conn: conn, Seq: seq, Time: wallclock.NowMilli(), Auth: nativeAuth},
			Op:     op,
		})
		s.countQuota(limited, res)
		if err == nil && res.Err != zkproto.ErrOK {
			err = res.Err
		}
		if err == nil {
			czxid = res.Stat.Czxid
		}
	}
	if err != nil {
		// The lease has nothing to own: end it now rather than at expiry.
		if cerr := s.node.CloseSession(id, conn, seq+1); cerr != nil {
			s.log.Warn().Err(cerr).Str("lease", fmt.Sprintf("0x%x", id)).Msg("closing an unused lease failed; it expires")
		}
		if errors.Is(err, zkproto.ErrNodeExists) {
			// Registered meanwhile by someone else.
			return nil, s.conflict(ctx, path)
		}
		return nil, codeOf("register", path, err)
	}
	s.log.Info().Str("path", path).Str("lease", fmt.Sprintf("0x%x", id)).Int64("epoch", czxid).Msg("member registered")
	s.activity.lease(id, path, true)
	return &zkbridgev1.RegisterResponse{Epoch: czxid, Lease: &zkbridgev1.Lease{Id: id, Token: token}, Path: path, TtlMs: int64(ttl), CoordinatorEpoch: coordEpoch}, nil
}

// electCoordinator makes lease id Fluss's coordinator leader: one
// transaction creates /fluss/coordinators/active (ephemeral, the lease's)
// and sets /fluss/coordinators/epoch to its value + 1 at the version read,
// as Fluss's leader does after its LeaderLatch. A concurrent epoch change
// is read again. It returns the active node's czxid, the new epoch and the
// sequence number of the lease's last write.
func (s *Server) electCoordinator(ctx context.Context, id int64, conn uint64, payload []byte) (czxid, epoch int64, seq uint64, err error) {
	if _, err := s.propose(&sm.Create{OpCode: zkproto.OpCreate, Path: flussEpoch, Data: []byte("-1"), ACL: zkproto.OpenACLUnsafe()}); err != nil && !errors.Is(err, zkproto.ErrNodeExists) {
		return 0, 0, 0, err
	}
	for attempt := 0; attempt < 20; attempt++ {
		v, err := s.view(ctx, false)
		if err != nil {
			return 0, 0, seq, err
		}
		n, err := v.Get(flussEpoch)
		v.Close()
		if err != nil {
			return 0, 0, seq, err
		}
		cur, perr := strconv.ParseInt(strings.TrimSpace(string(n.Data)), 10, 32)
		if perr != nil {
			return 0, 0, seq, status.Errorf(codes.FailedPrecondition, "register %s: %s holds %q, not an integer epoch", flussActive, flussEpoch, n.Data)
		}
		seq++
		op, limited := s.limited(&sm.Multi{Ops: []sm.Op{
			&sm.Create{OpCode: zkproto.OpCreate, Path: flussActive, Data: payload, ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeEphemeral)},
			&sm.SetData{Path: flussEpoch, Data: []byte(strconv.FormatInt(cur+1, 10)), Version: n.Stat.Version},
		}})
		res, err := s.node.ProposeSync(&sm.Command{
			Header: sm.Header{Session: id, Conn: conn, Seq: seq, Time: wallclock.NowMilli(), Auth: nativeAuth},
			Op:     op,
		})
		s.countQuota(limited, res)
		if err != nil {
			return 0, 0, seq, err
		}
		if res.Err != zkproto.ErrOK {
			return 0, 0, seq, res.Err
		}
		switch {
		case len(res.Ops) == 2 && res.Ops[0].Err == zkproto.ErrOK && res.Ops[1].Err == zkproto.ErrOK:
			return res.Zxid, cur + 1, seq, nil
		case len(res.Ops) > 0 && res.Ops[0].Err == zkproto.ErrNodeExists:
			return 0, 0, seq, zkproto.ErrNodeExists
		case len(res.Ops) > 1 && res.Ops[1].Err == zkproto.ErrBadVersion:
			continue // the epoch moved: read it again
		}
		for _, o := range res.Ops {
			if o.Err != zkproto.ErrOK && o.Err != zkproto.ErrRuntimeInconsistency {
				return 0, 0, seq, o.Err
			}
		}
		return 0, 0, seq, zkproto.ErrSystemError
	}
	return 0, 0, seq, status.Errorf(codes.Aborted, "register %s: the coordinator epoch kept changing", flussActive)
}

// ensureParents creates the missing persistent parents of path (a local
// read first: a group's parents exist after its first registration).
func (s *Server) ensureParents(path string) error {
	var missing []string
	v, err := s.node.View()
	if err != nil {
		return status.Errorf(codes.Internal, "register %s: read view: %v", path, err)
	}
	for p := zkproto.ParentPath(path); p != "/" && p != ""; p = zkproto.ParentPath(p) {
		if _, err := v.Exists(p); err == nil {
			break
		}
		missing = append(missing, p)
	}
	v.Close()
	for i := len(missing) - 1; i >= 0; i-- {
		_, err := s.propose(&sm.Create{OpCode: zkproto.OpCreate, Path: missing[i], ACL: zkproto.OpenACLUnsafe()})
		if err != nil && !errors.Is(err, zkproto.ErrNodeExists) {
			return codeOf("register (parent)", missing[i], err)
		}
	}
	return nil
}

// checkHolder refuses a registration over a live one, unless expected
// names the holder's epoch: then the holder's lease (or ZooKeeper session)
// is ended as an expiry would end it.
func (s *Server) checkHolder(ctx context.Context, path string, expected *int64) error {
	v, err := s.view(ctx, false)
	if err != nil {
		return err
	}
	n, err := v.Get(path)
	v.Close()
	if errors.Is(err, zkproto.ErrNoNode) {
		return nil
	}
	if err != nil {
		return codeOf("register", path, err)
	}
	if n.Stat.EphemeralOwner == 0 {
		return status.Errorf(codes.FailedPrecondition, "register %s: a persistent znode is there, not a registration", path)
	}
	if expected == nil || *expected != n.Stat.Czxid {
		return s.conflictOf(path, n.Stat)
	}
	if err := s.node.ExpireSession(n.Stat.EphemeralOwner); err != nil && !errors.Is(err, zkproto.ErrSessionExpired) {
		return codeOf("register (takeover)", path, err)
	}
	s.log.Info().Str("path", path).Int64("epoch", n.Stat.Czxid).Str("holder", fmt.Sprintf("0x%x", n.Stat.EphemeralOwner)).Msg("registration taken over: the holder's session ended")
	return nil
}

// conflict reads the current holder of path for an ALREADY_EXISTS.
func (s *Server) conflict(ctx context.Context, path string) error {
	v, err := s.view(ctx, false)
	if err != nil {
		return err
	}
	defer v.Close()
	n, err := v.Get(path)
	if err != nil {
		return status.Errorf(codes.Aborted, "register %s: contended; try again", path)
	}
	return s.conflictOf(path, n.Stat)
}

func (s *Server) conflictOf(path string, st zkproto.Stat) error {
	sts := status.Newf(codes.AlreadyExists, "register %s: already registered with epoch %d by lease or session 0x%x (present that epoch as expected_epoch to take over)",
		path, st.Czxid, st.EphemeralOwner)
	if d, err := sts.WithDetails(&zkbridgev1.RegisterConflict{Path: path, HolderEpoch: st.Czxid, HolderLease: st.EphemeralOwner}); err == nil {
		sts = d
	}
	return sts.Err()
}

// heartbeat renews lease id: TTL from now, or an error when it is gone.
func (s *Server) heartbeat(id int64) (int64, error) {
	if err := s.serving(); err != nil {
		return 0, err
	}
	info, err := s.node.SessionInfo(id)
	if errors.Is(err, zkproto.ErrSessionExpired) {
		// This replica may not have applied the lease's creation yet (a
		// client that registered on another node): catch up with the
		// leader before saying it is gone.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = s.node.CatchUp(ctx)
		cancel()
		info, err = s.node.SessionInfo(id)
	}
	if errors.Is(err, zkproto.ErrSessionExpired) {
		return 0, status.Errorf(codes.NotFound, "heartbeat: lease 0x%x expired or never existed", id)
	}
	if err != nil {
		return 0, codeOf("heartbeat", fmt.Sprintf("lease 0x%x", id), err)
	}
	// Acknowledged only once the leader knows of the renewal.
	if err := s.node.RenewSession(id); errors.Is(err, zkproto.ErrSessionExpired) {
		return 0, status.Errorf(codes.NotFound, "heartbeat: lease 0x%x expired", id)
	} else if err != nil {
		return 0, codeOf("heartbeat", fmt.Sprintf("lease 0x%x", id), err)
	}
	s.activity.lease(id, "", false)
	return int64(info.Timeout), nil
}

// Heartbeat renews a lease.
func (s *Server) Heartbeat(ctx context.Context, r *zkbridgev1.HeartbeatRequest) (*zkbridgev1.HeartbeatResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	ttl, err := s.heartbeat(r.LeaseId)
	if err != nil {
		return nil, err
	}
	return &zkbridgev1.HeartbeatResponse{LeaseId: r.LeaseId, TtlMs: ttl}, nil
}

// KeepAlive renews leases as a stream: one response per request, ttl_ms 0
// for a lease that is gone (etcd's LeaseKeepAlive).
func (s *Server) KeepAlive(stream zkbridgev1.Bridge_KeepAliveServer) error {
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := checkTenant(r.Tenant); err != nil {
			return err
		}
		ttl, err := s.heartbeat(r.LeaseId)
		if err != nil && status.Code(err) != codes.NotFound {
			return err
		}
		if err := stream.Send(&zkbridgev1.HeartbeatResponse{LeaseId: r.LeaseId, TtlMs: ttl}); err != nil {
			return err
		}
	}
}

// Deregister ends a lease now: its znodes are deleted.
func (s *Server) Deregister(ctx context.Context, r *zkbridgev1.DeregisterRequest) (*zkbridgev1.DeregisterResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	if r.Lease == nil || r.Lease.Id == 0 {
		return nil, status.Error(codes.InvalidArgument, "deregister: no lease")
	}
	if err := s.serving(); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("lease 0x%x", r.Lease.Id)
	// Take the lease over on a connection of this call (its password, the
	// token, is checked in apply), then close it as that connection's
	// first write: any node can end any lease its holder names.
	conn := randomID()
	res, err := s.node.ResumeSession(r.Lease.Id, conn, r.Lease.Token)
	if err != nil {
		return nil, codeOf("deregister", name, err)
	}
	if res.Err != zkproto.ErrOK {
		if res.Err == zkproto.ErrSessionExpired || res.Err == zkproto.ErrAuthFailed {
			return nil, status.Errorf(codes.NotFound, "deregister: %s expired, never existed, or the token is wrong", name)
		}
		return nil, codeOf("deregister", name, res.Err)
	}
	if err := s.node.CloseSession(r.Lease.Id, conn, 1); err != nil {
		return nil, codeOf("deregister", name, err)
	}
	return &zkbridgev1.DeregisterResponse{}, nil
}
