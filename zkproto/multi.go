package zkproto

import (
	"errors"
	"fmt"
)

// ErrMultiOpType is a multi or multiRead op of a type a multi cannot carry;
// ZooKeeper answers it with MarshallingError.
var ErrMultiOpType = errors.New("zkproto: invalid type of op in multi")

// MultiOp is one operation of a multi (op 14) or multiRead (op 22) request.
type MultiOp struct {
	Type    OpCode
	Request Record // *CreateRequest, *CreateTTLRequest, *DeleteRequest, …
}

// MultiRequest is the body of multi and multiRead (MultiOperationRecord):
// each op as a MultiHeader{type, false, -1} and its request, then a
// MultiHeader{-1, true, -1}. Whether the ops may be mixed is the server's
// decision (ZooKeeper answers MarshallingError to a read/write mix).
type MultiRequest struct {
	Ops []MultiOp
}

// multiOpRequest returns the request record a multi carries for op type t.
func multiOpRequest(t OpCode) Record {
	switch t {
	case OpCreate, OpCreate2, OpCreateContainer:
		return new(CreateRequest)
	case OpCreateTTL:
		return new(CreateTTLRequest)
	case OpDelete, OpDeleteContainer:
		return new(DeleteRequest)
	case OpSetData:
		return new(SetDataRequest)
	case OpCheck:
		return new(CheckVersionRequest)
	case OpGetChildren:
		return new(GetChildrenRequest)
	case OpGetData:
		return new(GetDataRequest)
	}
	return nil
}

// Smallest encodings of a multi op (header + delete or check request with
// an empty path) and of a multi result (header of a delete or check), and
// of the done header that ends both.
const (
	minMultiOpSize     = 9 + 4 + 4
	minMultiResultSize = 9
	multiDoneSize      = 9
)

// multiCapacity estimates how many more ops or results the rest of d can
// hold, so decoding a multi allocates its slice once. The estimate is
// bounded by the input and by a small cap beyond which append takes over.
func multiCapacity(d *Decoder, minSize int) int {
	return min(max(d.Remaining()-multiDoneSize, 0)/minSize, 16)
}

var multiDone = MultiHeader{Type: OpError, Done: true, Err: ErrSystemError}

// Encode writes the ops and the done header.
func (r *MultiRequest) Encode(e *Encoder) {
	for _, op := range r.Ops {
		h := MultiHeader{Type: op.Type, Done: false, Err: -1}
		h.Encode(e)
		op.Request.Encode(e)
	}
	multiDone.Encode(e)
}

// Decode reads ops until the done header. An op type a multi cannot carry
// is an error (ZooKeeper: "Invalid type of op", MarshallingError).
func (r *MultiRequest) Decode(d *Decoder) error {
	r.Ops = r.Ops[:0]
	for {
		var h MultiHeader
		if err := h.Decode(d); err != nil {
			return err
		}
		if h.Done {
			return nil
		}
		req := multiOpRequest(h.Type)
		if req == nil {
			d.Fail(fmt.Errorf("%w: %d", ErrMultiOpType, h.Type))
			return d.Err()
		}
		if err := req.Decode(d); err != nil {
			return err
		}
		if r.Ops == nil {
			r.Ops = make([]MultiOp, 0, 1+multiCapacity(d, minMultiOpSize))
		}
		r.Ops = append(r.Ops, MultiOp{Type: h.Type, Request: req})
	}
}

// MultiResult is one result of a multi or multiRead response. Type is the
// result type (1 create, 15 create2 — also for createContainer and
// createTTL —, 2 delete, 5 setData, 13 check, 4 getData, 8 getChildren,
// -1 error). Err is the header's err: 0 for a success, the code for an
// error result (whose Response is an *ErrorResponse with the same code).
type MultiResult struct {
	Type     OpCode
	Err      ErrCode
	Response Record // nil for delete and check results
}

// ErrorResult returns an error-typed result for code.
func ErrorResult(code ErrCode) MultiResult {
	return MultiResult{Type: OpError, Err: code, Response: &ErrorResponse{Err: code}}
}

// MultiResponse is the body of a multi or multiRead reply. A failed multi
// is still ReplyHeader.err 0: the failure is in the results, all of type
// -1, with errs 0…0, the code, then -2 RuntimeInconsistency.
type MultiResponse struct {
	Results []MultiResult
}

func multiResultRecord(t OpCode) (Record, bool) {
	switch t {
	case OpCreate:
		return new(CreateResponse), true
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		return new(Create2Response), true
	case OpDelete, OpDeleteContainer, OpCheck:
		return nil, true
	case OpSetData:
		return new(SetDataResponse), true
	case OpGetData:
		return new(GetDataResponse), true
	case OpGetChildren:
		return new(GetChildrenResponse), true
	case OpError:
		return new(ErrorResponse), true
	}
	return nil, false
}

// Encode writes the results and the done header.
func (r *MultiResponse) Encode(e *Encoder) {
	for _, res := range r.Results {
		h := MultiHeader{Type: res.Type, Done: false, Err: res.Err}
		h.Encode(e)
		if res.Response != nil {
			res.Response.Encode(e)
		}
	}
	multiDone.Encode(e)
}

// Decode reads results until the done header.
func (r *MultiResponse) Decode(d *Decoder) error {
	r.Results = r.Results[:0]
	for {
		var h MultiHeader
		if err := h.Decode(d); err != nil {
			return err
		}
		if h.Done {
			return nil
		}
		body, ok := multiResultRecord(h.Type)
		if !ok {
			d.Fail(fmt.Errorf("zkproto: invalid multi result type %d", h.Type))
			return d.Err()
		}
		if body != nil {
			if err := body.Decode(d); err != nil {
				return err
			}
		}
		if r.Results == nil {
			r.Results = make([]MultiResult, 0, 1+multiCapacity(d, minMultiResultSize))
		}
		r.Results = append(r.Results, MultiResult{Type: h.Type, Err: h.Err, Response: body})
	}
}

// FirstError returns the first non-OK error of a multi's results, or ErrOK.
func (r *MultiResponse) FirstError() ErrCode {
	for _, res := range r.Results {
		if res.Type == OpError && res.Err != ErrOK {
			return res.Err
		}
	}
	return ErrOK
}
