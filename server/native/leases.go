package native

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// A lease is a session without a TCP connection: the same replicated
// record, expiry, ephemerals index, dump and getEphemerals as a ZooKeeper
// client's session. Heartbeats touch it on the node that receives them,
// which reports the activity to the leader every half tick; the leader
// expires it past its TTL, deleting its znodes (ZooKeeper watches fire, the
// change log records the deletes). A new leader grants every session, so
// every lease, a full TTL.

// segment is what a group or member id may be: one path segment.
var segment = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// registrationPath maps a profile, group and member to the znode a
// registration creates, and checks its payload.
func registrationPath(profile, group, member string, payload []byte) (string, error) {
	if !segment.MatchString(member) || member == "." || member == ".." {
		return "", fmt.Errorf("member_id %q is not one path segment of letters, digits, '.', '_', ':' or '-'", member)
	}
	switch profile {
	case "", "generic":
		if !segment.MatchString(group) || group == "." || group == ".." || group == "zookeeper" {
			return "", fmt.Errorf("group %q is not one path segment of letters, digits, '.', '_', ':' or '-' (and not zookeeper)", group)
		}
		return "/" + group + "/ids/" + member, nil
	case "fluss":
		// Fluss's ZooKeeper layout (ZkData.java, Fluss main 2026-08):
		// tablet servers register at <root>/tabletservers/ids/<id>, root
		// /fluss by default, with TabletServerRegistration JSON.
		if group != "tabletservers" {
			return "", fmt.Errorf("profile fluss registers group tabletservers, not %q", group)
		}
		for _, c := range member {
			if c < '0' || c > '9' {
				return "", fmt.Errorf("a Fluss tablet server id is an integer, not %q", member)
			}
		}
		var reg struct {
			Version *int `json:"version"`
		}
		if err := json.Unmarshal(payload, &reg); err != nil || reg.Version == nil {
			return "", errors.New(`a Fluss tablet server registration is JSON with a "version" (TabletServerRegistration, e.g. {"version":4,"listeners":"FLUSS://host:9123","register_timestamp":…})`)
		}
		return "/fluss/tabletservers/ids/" + member, nil
	}
	return "", fmt.Errorf("unknown profile %q (generic or fluss)", profile)
}

// Register adds a member: an ephemeral znode owned by a new lease.
func (s *Server) Register(ctx context.Context, r *zkbridgev1.RegisterRequest) (*zkbridgev1.RegisterResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	path, err := registrationPath(r.Profile, r.Group, r.MemberId, r.Payload)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "register: %v", err)
	}
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
	res, err := s.node.ProposeSync(&sm.Command{
		Header: sm.Header{Session: id, Conn: conn, Seq: 1, Time: time.Now().UnixMilli(), Auth: nativeAuth},
		Op:     &sm.Create{OpCode: zkproto.OpCreate2, Path: path, Data: r.Payload, ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeEphemeral)},
	})
	if err == nil && res.Err != zkproto.ErrOK {
		err = res.Err
	}
	if err != nil {
		// The lease has nothing to own: end it now rather than at expiry.
		if cerr := s.node.CloseSession(id, conn, 2); cerr != nil {
			s.log.Warn().Err(cerr).Str("lease", fmt.Sprintf("0x%x", id)).Msg("closing an unused lease failed; it expires")
		}
		if errors.Is(err, zkproto.ErrNodeExists) {
			// Registered meanwhile by someone else.
			return nil, s.conflict(ctx, path)
		}
		return nil, codeOf("register", path, err)
	}
	s.log.Info().Str("path", path).Str("lease", fmt.Sprintf("0x%x", id)).Int64("epoch", res.Stat.Czxid).Msg("member registered")
	return &zkbridgev1.RegisterResponse{Epoch: res.Stat.Czxid, Lease: &zkbridgev1.Lease{Id: id, Token: token}, Path: path, TtlMs: int64(ttl)}, nil
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
	s.node.TouchSession(id)
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
