package zkproto_test

import (
	"bytes"
	"encoding/hex"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// rtSample is a record value with a name for test output.
type rtSample struct {
	name string
	rec  zkproto.Record
}

var rtStat = zkproto.Stat{
	Czxid: 0x100000002, Mzxid: 0x100000007, Ctime: 1700000000000, Mtime: 1700000001234,
	Version: 3, Cversion: -1, Aversion: 2, EphemeralOwner: 0x0100000000000001,
	DataLength: 5, NumChildren: 7, Pzxid: -1,
}

var rtACL = []zkproto.ACL{
	{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "world", ID: "anyone"}},
	{Perms: zkproto.PermRead | zkproto.PermAdmin, ID: zkproto.Id{Scheme: "digest", ID: "alice:XxQ3Zq1m6cWJ9fD0BNq3eF0aM2g="}},
	{Perms: 0, ID: zkproto.Id{Scheme: "", ID: ""}},
}

// rtSamples returns values of every record type of the package, several
// per type where null and empty buffers or vectors must stay distinct.
// Fuzz targets use their encodings as seeds.
func rtSamples() []rtSample {
	pw := bytes.Repeat([]byte{0xa5}, zkproto.PasswordLength)
	return []rtSample{
		{"RequestHeader", &zkproto.RequestHeader{Xid: 7, Type: zkproto.OpGetData}},
		{"RequestHeader/ping", &zkproto.RequestHeader{Xid: zkproto.XidPing, Type: zkproto.OpPing}},
		{"ReplyHeader", &zkproto.ReplyHeader{Xid: 7, Zxid: 0x1122334455667788, Err: zkproto.ErrNoNode}},
		{"WatcherEvent", &zkproto.WatcherEvent{Type: zkproto.EventNodeDataChanged, State: zkproto.StateSyncConnected, Path: "/a/b"}},
		{"MultiHeader", &zkproto.MultiHeader{Type: zkproto.OpCreate, Done: false, Err: -1}},
		{"MultiHeader/done", &zkproto.MultiHeader{Type: zkproto.OpError, Done: true, Err: -1}},
		{"AuthPacket", &zkproto.AuthPacket{Type: 0, Scheme: "digest", Auth: []byte("alice:secret")}},
		{"AuthPacket/nullAuth", &zkproto.AuthPacket{Scheme: "ip"}},
		{"AuthPacket/emptyAuth", &zkproto.AuthPacket{Scheme: "x", Auth: []byte{}}},
		{"SetWatches", &zkproto.SetWatches{RelativeZxid: 42, DataWatches: []string{"/a", "/b"}, ExistWatches: []string{}, ChildWatches: nil}},
		{"SetWatches2", &zkproto.SetWatches2{RelativeZxid: -1, DataWatches: nil, ExistWatches: []string{"/e"}, ChildWatches: []string{},
			PersistentWatches: []string{"/p", ""}, PersistentRecursiveWatches: []string{"/r"}}},
		{"GetDataRequest", &zkproto.GetDataRequest{Path: "/config/app", Watch: true}},
		{"SetDataRequest", &zkproto.SetDataRequest{Path: "/a", Data: []byte("new value"), Version: -1}},
		{"SetDataRequest/nullData", &zkproto.SetDataRequest{Path: "/a", Version: 3}},
		{"SetDataRequest/emptyData", &zkproto.SetDataRequest{Path: "/a", Data: []byte{}, Version: 3}},
		{"ReconfigRequest", &zkproto.ReconfigRequest{JoiningServers: "server.4=h4:2888:3888;2181", LeavingServers: "2,3", NewMembers: "", CurConfigID: -1}},
		{"SetDataResponse", &zkproto.SetDataResponse{Stat: rtStat}},
		{"GetSASLRequest", &zkproto.GetSASLRequest{Token: []byte{0x60, 0x82, 0x01}}},
		{"GetSASLRequest/null", &zkproto.GetSASLRequest{}},
		{"SetSASLRequest", &zkproto.SetSASLRequest{Token: []byte{}}},
		{"SetSASLResponse", &zkproto.SetSASLResponse{Token: []byte("challenge")}},
		{"CreateRequest", &zkproto.CreateRequest{Path: "/a", Data: []byte("hi"), ACL: zkproto.OpenACLUnsafe(), Flags: 0}},
		{"CreateRequest/nullDataNullACL", &zkproto.CreateRequest{Path: "/app/", Flags: int32(zkproto.ModeEphemeralSequential)}},
		{"CreateRequest/emptyDataEmptyACL", &zkproto.CreateRequest{Path: "/b", Data: []byte{}, ACL: []zkproto.ACL{}, Flags: 4}},
		{"CreateTTLRequest", &zkproto.CreateTTLRequest{Path: "/ttl", Data: []byte{0}, ACL: rtACL, Flags: int32(zkproto.ModePersistentWithTTL), TTL: zkproto.MaxTTL}},
		{"DeleteRequest", &zkproto.DeleteRequest{Path: "/a/b", Version: 12}},
		{"GetChildrenRequest", &zkproto.GetChildrenRequest{Path: "/", Watch: false}},
		{"GetAllChildrenNumberRequest", &zkproto.GetAllChildrenNumberRequest{Path: "/x"}},
		{"GetChildren2Request", &zkproto.GetChildren2Request{Path: "/zookeeper", Watch: true}},
		{"CheckVersionRequest", &zkproto.CheckVersionRequest{Path: "/c", Version: 2147483647}},
		{"GetMaxChildrenRequest", &zkproto.GetMaxChildrenRequest{Path: "/m"}},
		{"GetMaxChildrenResponse", &zkproto.GetMaxChildrenResponse{Max: 100}},
		{"SetMaxChildrenRequest", &zkproto.SetMaxChildrenRequest{Path: "/m", Max: -1}},
		{"SyncRequest", &zkproto.SyncRequest{Path: "/s"}},
		{"SyncResponse", &zkproto.SyncResponse{Path: "/s"}},
		{"GetACLRequest", &zkproto.GetACLRequest{Path: "/acl"}},
		{"SetACLRequest", &zkproto.SetACLRequest{Path: "/acl", ACL: rtACL, Version: 0}},
		{"SetACLRequest/nullACL", &zkproto.SetACLRequest{Path: "/acl", Version: -1}},
		{"SetACLResponse", &zkproto.SetACLResponse{Stat: rtStat}},
		{"AddWatchRequest", &zkproto.AddWatchRequest{Path: "/w", Mode: zkproto.AddWatchPersistentRecursive}},
		{"ErrorResponse", &zkproto.ErrorResponse{Err: zkproto.ErrRuntimeInconsistency}},
		{"CreateResponse", &zkproto.CreateResponse{Path: "/app/0000000003"}},
		{"Create2Response", &zkproto.Create2Response{Path: "/c", Stat: rtStat}},
		{"ExistsRequest", &zkproto.ExistsRequest{Path: "/e", Watch: true}},
		{"ExistsResponse", &zkproto.ExistsResponse{Stat: rtStat}},
		{"GetDataResponse", &zkproto.GetDataResponse{Data: []byte("payload"), Stat: rtStat}},
		{"GetDataResponse/nullData", &zkproto.GetDataResponse{Stat: zkproto.Stat{}}},
		{"GetDataResponse/emptyData", &zkproto.GetDataResponse{Data: []byte{}, Stat: rtStat}},
		{"GetChildrenResponse", &zkproto.GetChildrenResponse{Children: []string{"a", "b", "0000000001"}}},
		{"GetChildrenResponse/null", &zkproto.GetChildrenResponse{}},
		{"GetChildrenResponse/empty", &zkproto.GetChildrenResponse{Children: []string{}}},
		{"GetAllChildrenNumberResponse", &zkproto.GetAllChildrenNumberResponse{TotalNumber: 3}},
		{"GetChildren2Response", &zkproto.GetChildren2Response{Children: []string{"zookeeper"}, Stat: rtStat}},
		{"GetACLResponse", &zkproto.GetACLResponse{ACL: rtACL, Stat: rtStat}},
		{"GetACLResponse/nullACL", &zkproto.GetACLResponse{Stat: rtStat}},
		{"CheckWatchesRequest", &zkproto.CheckWatchesRequest{Path: "/w", Type: zkproto.WatcherData}},
		{"RemoveWatchesRequest", &zkproto.RemoveWatchesRequest{Path: "/w", Type: zkproto.WatcherAny}},
		{"GetEphemeralsRequest", &zkproto.GetEphemeralsRequest{PrefixPath: "/"}},
		{"GetEphemeralsResponse", &zkproto.GetEphemeralsResponse{Ephemerals: []string{"/e1", "/a/e2"}}},
		{"ClientInfo", &zkproto.ClientInfo{AuthScheme: "ip", User: "127.0.0.1"}},
		{"WhoAmIResponse", &zkproto.WhoAmIResponse{ClientInfo: []zkproto.ClientInfo{{AuthScheme: "digest", User: "alice"}, {AuthScheme: "ip", User: "127.0.0.1"}}}},
		{"WhoAmIResponse/null", &zkproto.WhoAmIResponse{}},
		{"WhoAmIResponse/empty", &zkproto.WhoAmIResponse{ClientInfo: []zkproto.ClientInfo{}}},
		{"DeleteContainerRequest", &zkproto.DeleteContainerRequest{Path: "/container"}},
		{"Empty", &zkproto.Empty{}},
		{"Stat", &rtStat},
		{"Id", &zkproto.Id{Scheme: "world", ID: "anyone"}},
		{"ACL", &zkproto.ACL{Perms: zkproto.PermCreate, ID: zkproto.Id{Scheme: "auth", ID: ""}}},
		{"ConnectRequest", &zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true}},
		{"ConnectRequest/readOnly", &zkproto.ConnectRequest{LastZxidSeen: 99, TimeOut: 4000, SessionID: 0x0100000000000007, Passwd: pw, ReadOnly: true, HasReadOnly: true}},
		{"ConnectRequest/short", &zkproto.ConnectRequest{TimeOut: 30000, SessionID: 5, Passwd: pw}},
		{"ConnectRequest/nullPasswd", &zkproto.ConnectRequest{TimeOut: 1, HasReadOnly: true}},
		{"ConnectResponse", &zkproto.ConnectResponse{TimeOut: 30000, SessionID: 0x0100000000000007, Passwd: pw, HasReadOnly: true}},
		{"ConnectResponse/readOnly", &zkproto.ConnectResponse{TimeOut: 4000, SessionID: 1, Passwd: pw, ReadOnly: true, HasReadOnly: true}},
		{"ConnectResponse/short", &zkproto.ConnectResponse{TimeOut: 40000, SessionID: 1, Passwd: pw}},
		{"ConnectResponse/expired", &zkproto.ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: true}},
		{"MultiRequest", rtMultiRequest()},
		{"MultiRequest/read", &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Type: zkproto.OpGetData, Request: &zkproto.GetDataRequest{Path: "/a"}},
			{Type: zkproto.OpGetChildren, Request: &zkproto.GetChildrenRequest{Path: "/"}},
		}}},
		{"MultiRequest/empty", &zkproto.MultiRequest{}},
		{"MultiResponse", rtMultiResponse()},
		{"MultiResponse/failed", rtFailedMulti()},
		{"MultiResponse/empty", &zkproto.MultiResponse{}},
	}
}

// rtMultiRequest carries every op type a multi or multiRead may hold.
func rtMultiRequest() *zkproto.MultiRequest {
	return &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
		{Type: zkproto.OpCreate, Request: &zkproto.CreateRequest{Path: "/m/a", Data: []byte("1"), ACL: zkproto.OpenACLUnsafe()}},
		{Type: zkproto.OpCreate2, Request: &zkproto.CreateRequest{Path: "/m/b", ACL: zkproto.OpenACLUnsafe(), Flags: 1}},
		{Type: zkproto.OpCreateContainer, Request: &zkproto.CreateRequest{Path: "/m/c", Data: []byte{}, ACL: rtACL, Flags: 4}},
		{Type: zkproto.OpCreateTTL, Request: &zkproto.CreateTTLRequest{Path: "/m/t", ACL: zkproto.OpenACLUnsafe(), Flags: 5, TTL: 1000}},
		{Type: zkproto.OpDelete, Request: &zkproto.DeleteRequest{Path: "/m/old", Version: -1}},
		{Type: zkproto.OpDeleteContainer, Request: &zkproto.DeleteRequest{Path: "/m/oldc", Version: 0}},
		{Type: zkproto.OpSetData, Request: &zkproto.SetDataRequest{Path: "/m", Data: []byte("v"), Version: 4}},
		{Type: zkproto.OpCheck, Request: &zkproto.CheckVersionRequest{Path: "/m", Version: 5}},
		{Type: zkproto.OpGetChildren, Request: &zkproto.GetChildrenRequest{Path: "/m", Watch: true}},
		{Type: zkproto.OpGetData, Request: &zkproto.GetDataRequest{Path: "/m"}},
	}}
}

// rtMultiResponse carries every result type a multi response may hold.
func rtMultiResponse() *zkproto.MultiResponse {
	return &zkproto.MultiResponse{Results: []zkproto.MultiResult{
		{Type: zkproto.OpCreate, Response: &zkproto.CreateResponse{Path: "/m/a"}},
		{Type: zkproto.OpCreate2, Response: &zkproto.Create2Response{Path: "/m/b", Stat: rtStat}},
		{Type: zkproto.OpCreateContainer, Response: &zkproto.Create2Response{Path: "/m/c"}},
		{Type: zkproto.OpCreateTTL, Response: &zkproto.Create2Response{Path: "/m/t"}},
		{Type: zkproto.OpDelete},
		{Type: zkproto.OpDeleteContainer},
		{Type: zkproto.OpSetData, Response: &zkproto.SetDataResponse{Stat: rtStat}},
		{Type: zkproto.OpCheck},
		{Type: zkproto.OpGetData, Response: &zkproto.GetDataResponse{Data: []byte("x"), Stat: rtStat}},
		{Type: zkproto.OpGetData, Response: &zkproto.GetDataResponse{}},
		{Type: zkproto.OpGetChildren, Response: &zkproto.GetChildrenResponse{Children: []string{"a"}}},
		{Type: zkproto.OpGetChildren, Response: &zkproto.GetChildrenResponse{Children: []string{}}},
		zkproto.ErrorResult(zkproto.ErrNoNode),
	}}
}

// rtFailedMulti is a multi whose second of three ops failed.
func rtFailedMulti() *zkproto.MultiResponse {
	return &zkproto.MultiResponse{Results: []zkproto.MultiResult{
		zkproto.ErrorResult(zkproto.ErrOK),
		zkproto.ErrorResult(zkproto.ErrNodeExists),
		zkproto.ErrorResult(zkproto.ErrRuntimeInconsistency),
	}}
}

// rtNew returns a fresh zero record of the same type as r.
func rtNew(r zkproto.Record) zkproto.Record {
	return reflect.New(reflect.TypeOf(r).Elem()).Interface().(zkproto.Record)
}

func rtHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func TestRoundTripEveryRecord(t *testing.T) {
	for _, s := range rtSamples() {
		t.Run(s.name, func(t *testing.T) {
			b := zkproto.Marshal(s.rec)
			got := rtNew(s.rec)
			if err := zkproto.Unmarshal(b, got); err != nil {
				t.Fatalf("Unmarshal(%x): %v", b, err)
			}
			if !reflect.DeepEqual(got, s.rec) {
				t.Fatalf("decoded %#v\nwant %#v", got, s.rec)
			}
			if again := zkproto.Marshal(got); !bytes.Equal(again, b) {
				t.Fatalf("re-encoded %x\nwant %x", again, b)
			}
		})
	}
}

// TestSamplesCoverEveryRecord parses the package and fails when a type
// with Encode and Decode methods has no sample in rtSamples.
func TestSamplesCoverEveryRecord(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			id, ok := star.X.(*ast.Ident)
			if !ok {
				continue
			}
			if methods[id.Name] == nil {
				methods[id.Name] = map[string]bool{}
			}
			methods[id.Name][fn.Name.Name] = true
		}
	}
	covered := map[string]bool{}
	for _, s := range rtSamples() {
		covered[reflect.TypeOf(s.rec).Elem().Name()] = true
	}
	var missing []string
	records := 0
	for typ, m := range methods {
		if !m["Encode"] || !m["Decode"] {
			continue
		}
		records++
		if !covered[typ] {
			missing = append(missing, typ)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("record types without a round-trip sample: %v", missing)
	}
	if records < 50 {
		t.Errorf("found only %d record types; is the parser looking at the package?", records)
	}
}

func TestRecordSizes(t *testing.T) {
	tests := []struct {
		rec  zkproto.Record
		size int
	}{
		{&zkproto.RequestHeader{}, 8},
		{&zkproto.ReplyHeader{}, 16},
		{&zkproto.MultiHeader{}, 9},
		{&zkproto.Stat{}, zkproto.StatSize},
		{&zkproto.ExistsResponse{}, zkproto.StatSize},
		{&zkproto.ErrorResponse{}, 4},
		{&zkproto.Empty{}, 0},
		{&zkproto.GetDataResponse{}, 4 + zkproto.StatSize},
		{&zkproto.ConnectRequest{Passwd: make([]byte, 16), HasReadOnly: true}, 45},
		{&zkproto.ConnectRequest{Passwd: make([]byte, 16)}, 44},
		{&zkproto.ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: true}, 37},
		{&zkproto.ConnectResponse{Passwd: make([]byte, 16)}, 36},
	}
	for _, tt := range tests {
		if got := len(zkproto.Marshal(tt.rec)); got != tt.size {
			t.Errorf("%T %+v: %d bytes, want %d", tt.rec, tt.rec, got, tt.size)
		}
	}
}

// TestConnectForms checks that both handshake forms decode to the form they
// came in and re-encode to the same size.
func TestConnectForms(t *testing.T) {
	tests := []struct {
		name        string
		rec         zkproto.Record
		size        int
		hasReadOnly bool
	}{
		{"request/long", &zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), ReadOnly: true, HasReadOnly: true}, 45, true},
		{"request/short", &zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}, 44, false},
		{"response/long", &zkproto.ConnectResponse{TimeOut: 4000, SessionID: 9, Passwd: make([]byte, 16), HasReadOnly: true}, 37, true},
		{"response/short", &zkproto.ConnectResponse{TimeOut: 4000, SessionID: 9, Passwd: make([]byte, 16)}, 36, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := zkproto.Marshal(tt.rec)
			if len(b) != tt.size {
				t.Fatalf("encoded %d bytes, want %d", len(b), tt.size)
			}
			got := rtNew(tt.rec)
			if err := zkproto.Unmarshal(b, got); err != nil {
				t.Fatal(err)
			}
			has := reflect.ValueOf(got).Elem().FieldByName("HasReadOnly").Bool()
			if has != tt.hasReadOnly {
				t.Errorf("HasReadOnly = %v, want %v", has, tt.hasReadOnly)
			}
			if !reflect.DeepEqual(got, tt.rec) {
				t.Errorf("decoded %+v, want %+v", got, tt.rec)
			}
		})
	}
}

// TestReferenceConnectFrame is the new-session frame of the protocol
// reference (§2.1), byte for byte.
func TestReferenceConnectFrame(t *testing.T) {
	frame := rtHex(t, "0000002d 00000000 0000000000000000 00007530 0000000000000000 00000010 00000000000000000000000000000000 00")
	req := &zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true}
	if got := zkproto.AppendFrame(nil, zkproto.Marshal(req)); !bytes.Equal(got, frame) {
		t.Fatalf("encoded frame %x\nwant          %x", got, frame)
	}
	fr := zkproto.NewFrameReader(bytes.NewReader(frame), 0)
	payload, word, err := fr.First()
	if err != nil || word != "" {
		t.Fatalf("First() = word %q, err %v", word, err)
	}
	var got zkproto.ConnectRequest
	if err := zkproto.Unmarshal(payload, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, req) {
		t.Fatalf("decoded %+v, want %+v", got, *req)
	}
}

// TestReferenceCreateFrame is the create frame of the protocol reference
// (§8): xid 1, "/a", data "hi", OPEN_ACL_UNSAFE, flags 0.
func TestReferenceCreateFrame(t *testing.T) {
	frame := rtHex(t, "00000033 00000001 00000001 00000002 2f61 00000002 6869 00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65 00000000")
	hdr := &zkproto.RequestHeader{Xid: 1, Type: zkproto.OpCreate}
	req := &zkproto.CreateRequest{Path: "/a", Data: []byte("hi"), ACL: zkproto.OpenACLUnsafe(), Flags: 0}

	var e zkproto.Encoder
	off := e.StartFrame()
	hdr.Encode(&e)
	req.Encode(&e)
	e.FinishFrame(off)
	if !bytes.Equal(e.Bytes(), frame) {
		t.Fatalf("encoded frame %x\nwant          %x", e.Bytes(), frame)
	}

	payload, err := zkproto.NewFrameReader(bytes.NewReader(frame), 0).Next()
	if err != nil {
		t.Fatal(err)
	}
	d := zkproto.NewDecoder(payload)
	var gotHdr zkproto.RequestHeader
	if err := gotHdr.Decode(d); err != nil {
		t.Fatal(err)
	}
	body, ok := zkproto.NewRequest(gotHdr.Type)
	if !ok {
		t.Fatalf("NewRequest(%v) = false", gotHdr.Type)
	}
	if err := body.Decode(d); err != nil || d.Remaining() != 0 {
		t.Fatalf("Decode: %v, %d bytes left", err, d.Remaining())
	}
	if gotHdr != *hdr || !reflect.DeepEqual(body, req) {
		t.Fatalf("decoded %+v %+v, want %+v %+v", gotHdr, body, *hdr, *req)
	}
}

func TestMultiFraming(t *testing.T) {
	tests := []struct {
		name string
		rec  zkproto.Record
		hex  string
	}{
		{"emptyResponse", &zkproto.MultiResponse{}, "ffffffff 01 ffffffff"},
		{"emptyRequest", &zkproto.MultiRequest{}, "ffffffff 01 ffffffff"},
		{"failedMulti", rtFailedMulti(),
			"ffffffff 00 00000000 00000000" +
				"ffffffff 00 ffffff92 ffffff92" +
				"ffffffff 00 fffffffe fffffffe" +
				"ffffffff 01 ffffffff"},
		{"checkAndDelete", &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Type: zkproto.OpCheck, Request: &zkproto.CheckVersionRequest{Path: "/a", Version: 1}},
			{Type: zkproto.OpDelete, Request: &zkproto.DeleteRequest{Path: "/a", Version: -1}},
		}},
			"0000000d 00 ffffffff 00000002 2f61 00000001" +
				"00000002 00 ffffffff 00000002 2f61 ffffffff" +
				"ffffffff 01 ffffffff"},
		{"deleteAndCheckResults", &zkproto.MultiResponse{Results: []zkproto.MultiResult{
			{Type: zkproto.OpDelete}, {Type: zkproto.OpCheck},
		}}, "00000002 00 00000000 0000000d 00 00000000 ffffffff 01 ffffffff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := rtHex(t, tt.hex)
			if got := zkproto.Marshal(tt.rec); !bytes.Equal(got, want) {
				t.Fatalf("encoded %x\nwant    %x", got, want)
			}
			got := rtNew(tt.rec)
			if err := zkproto.Unmarshal(want, got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.rec) {
				t.Fatalf("decoded %+v, want %+v", got, tt.rec)
			}
		})
	}
}

func TestMultiFirstError(t *testing.T) {
	tests := []struct {
		name string
		resp *zkproto.MultiResponse
		want zkproto.ErrCode
	}{
		{"empty", &zkproto.MultiResponse{}, zkproto.ErrOK},
		{"success", rtMultiResponse(), zkproto.ErrNoNode},
		{"failed", rtFailedMulti(), zkproto.ErrNodeExists},
		{"allOK", &zkproto.MultiResponse{Results: []zkproto.MultiResult{{Type: zkproto.OpDelete}, zkproto.ErrorResult(zkproto.ErrOK)}}, zkproto.ErrOK},
	}
	for _, tt := range tests {
		if got := tt.resp.FirstError(); got != tt.want {
			t.Errorf("%s: FirstError() = %v, want %v", tt.name, got.Name(), tt.want.Name())
		}
	}
}

func TestMultiRejectsInvalidTypes(t *testing.T) {
	tests := []struct {
		name string
		rec  zkproto.Record
		hex  string
	}{
		{"request/exists", &zkproto.MultiRequest{}, "00000003 00 ffffffff 00000002 2f61 00 ffffffff 01 ffffffff"},
		{"request/nestedMulti", &zkproto.MultiRequest{}, "0000000e 00 ffffffff ffffffff 01 ffffffff"},
		{"request/error", &zkproto.MultiRequest{}, "ffffffff 00 ffffffff 00000000 ffffffff 01 ffffffff"},
		{"request/noDone", &zkproto.MultiRequest{}, "00000002 00 ffffffff 00000002 2f61 ffffffff"},
		{"response/exists", &zkproto.MultiResponse{}, "00000003 00 00000000 ffffffff 01 ffffffff"},
		{"response/noDone", &zkproto.MultiResponse{}, "00000002 00 00000000"},
		{"response/truncatedBody", &zkproto.MultiResponse{}, "00000001 00 00000000 00000005 2f61"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.rec.Decode(zkproto.NewDecoder(rtHex(t, tt.hex))); err == nil {
				t.Fatalf("Decode succeeded: %+v", tt.rec)
			}
		})
	}
}

// TestRegistry checks the request and response record of every opcode.
func TestRegistry(t *testing.T) {
	var (
		create   = &zkproto.CreateRequest{}
		create2  = &zkproto.Create2Response{}
		empty    = &zkproto.Empty{}
		errResp  = &zkproto.ErrorResponse{}
		getData  = &zkproto.GetDataResponse{}
		multiReq = &zkproto.MultiRequest{}
		multiRsp = &zkproto.MultiResponse{}
	)
	tests := []struct {
		op        zkproto.OpCode
		req, resp zkproto.Record // nil: the registry has none
	}{
		{zkproto.OpNotify, nil, nil},
		{zkproto.OpCreate, create, &zkproto.CreateResponse{}},
		{zkproto.OpDelete, &zkproto.DeleteRequest{}, empty},
		{zkproto.OpExists, &zkproto.ExistsRequest{}, &zkproto.ExistsResponse{}},
		{zkproto.OpGetData, &zkproto.GetDataRequest{}, getData},
		{zkproto.OpSetData, &zkproto.SetDataRequest{}, &zkproto.SetDataResponse{}},
		{zkproto.OpGetACL, &zkproto.GetACLRequest{}, &zkproto.GetACLResponse{}},
		{zkproto.OpSetACL, &zkproto.SetACLRequest{}, &zkproto.SetACLResponse{}},
		{zkproto.OpGetChildren, &zkproto.GetChildrenRequest{}, &zkproto.GetChildrenResponse{}},
		{zkproto.OpSync, &zkproto.SyncRequest{}, &zkproto.SyncResponse{}},
		{zkproto.OpPing, empty, empty},
		{zkproto.OpGetChildren2, &zkproto.GetChildren2Request{}, &zkproto.GetChildren2Response{}},
		{zkproto.OpCheck, &zkproto.CheckVersionRequest{}, empty},
		{zkproto.OpMulti, multiReq, multiRsp},
		{zkproto.OpCreate2, create, create2},
		{zkproto.OpReconfig, &zkproto.ReconfigRequest{}, getData},
		{zkproto.OpCheckWatches, &zkproto.CheckWatchesRequest{}, empty},
		{zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{}, empty},
		{zkproto.OpCreateContainer, create, create2},
		{zkproto.OpDeleteContainer, &zkproto.DeleteContainerRequest{}, empty},
		{zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{}, create2},
		{zkproto.OpMultiRead, multiReq, multiRsp},
		{zkproto.OpAuth, &zkproto.AuthPacket{}, empty},
		{zkproto.OpSetWatches, &zkproto.SetWatches{}, empty},
		{zkproto.OpSASL, &zkproto.GetSASLRequest{}, &zkproto.SetSASLResponse{}},
		{zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{}, &zkproto.GetEphemeralsResponse{}},
		{zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{}, &zkproto.GetAllChildrenNumberResponse{}},
		{zkproto.OpSetWatches2, &zkproto.SetWatches2{}, empty},
		{zkproto.OpAddWatch, &zkproto.AddWatchRequest{}, errResp},
		{zkproto.OpWhoAmI, empty, &zkproto.WhoAmIResponse{}},
		{zkproto.OpCreateSession, &zkproto.ConnectRequest{}, &zkproto.ConnectResponse{}},
		{zkproto.OpCloseSession, empty, empty},
		{zkproto.OpError, nil, errResp},
	}
	check := func(kind string, op zkproto.OpCode, got zkproto.Record, ok bool, want zkproto.Record) {
		t.Helper()
		if want == nil {
			if ok || got != nil {
				t.Errorf("%s(%v) = %T, %v; want nil, false", kind, op, got, ok)
			}
			return
		}
		if !ok || reflect.TypeOf(got) != reflect.TypeOf(want) {
			t.Errorf("%s(%v) = %T, %v; want %T, true", kind, op, got, ok, want)
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s(%v) = %+v, want a zero record", kind, op, got)
		}
	}
	for _, tt := range tests {
		if !tt.op.Known() {
			t.Errorf("%v.Known() = false", tt.op)
		}
		req, ok := zkproto.NewRequest(tt.op)
		check("NewRequest", tt.op, req, ok, tt.req)
		resp, ok := zkproto.NewResponse(tt.op)
		check("NewResponse", tt.op, resp, ok, tt.resp)
	}
	// Each call returns a fresh record.
	a, _ := zkproto.NewRequest(zkproto.OpGetData)
	b, _ := zkproto.NewRequest(zkproto.OpGetData)
	if a == b {
		t.Error("NewRequest returned the same record twice")
	}

	// Every other opcode number is unknown to both registries.
	known := map[zkproto.OpCode]bool{}
	for _, tt := range tests {
		known[tt.op] = true
	}
	for op := zkproto.OpCode(-20); op <= 200; op++ {
		if known[op] {
			continue
		}
		if op.Known() {
			t.Errorf("%v.Known() = true but the opcode is not in the test table", op)
		}
		if r, ok := zkproto.NewRequest(op); ok {
			t.Errorf("NewRequest(%d) = %T, true", op, r)
		}
		if r, ok := zkproto.NewResponse(op); ok {
			t.Errorf("NewResponse(%d) = %T, true", op, r)
		}
	}
	for _, op := range []zkproto.OpCode{-2147483648, 999, 2147483647} {
		if _, ok := zkproto.NewRequest(op); ok {
			t.Errorf("NewRequest(%d) = true", op)
		}
		if _, ok := zkproto.NewResponse(op); ok {
			t.Errorf("NewResponse(%d) = true", op)
		}
	}
}
