//go:build cgo && linux

package cverbs

import (
	"context"
	"errors"
	"net/netip"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/rdmacm"
)

// TestCMAddrConversions: addresses cross to C and back unchanged.
func TestCMAddrConversions(t *testing.T) {
	for _, s := range []string{"10.0.2.1:7471", "[fd00:5653::2c9:300:0:101]:1", "0.0.0.0:0", "[::]:65535"} {
		a := netip.MustParseAddrPort(s)
		c := cmIPOf(a)
		if got := goAddrPort(&c); got != a {
			t.Errorf("%v: back from C as %v", a, got)
		}
	}
	var zero netip.AddrPort
	if c := cmIPOf(zero); c.family != 0 || goAddrPort(&c) != zero {
		t.Errorf("the zero AddrPort: family %d", c.family)
	}
}

// TestCMBadInputInGo: what the binding refuses before C sees anything.
func TestCMBadInputInGo(t *testing.T) {
	dead := &cmID{dead: true}
	var noCtx context.Context // a nil context.Context
	var nilID *cmID
	cases := []struct {
		name  string
		err   error
		errno syscall.Errno
	}{
		{"a call on a nil ID", nilID.BindAddr(netip.MustParseAddrPort("10.0.0.1:1")), syscall.EINVAL},
		{"a call on a destroyed ID", dead.Listen(1), syscall.ENOENT},
		{"rdma_destroy_id of a destroyed ID", dead.Destroy(context.Background()), syscall.ENOENT},
		{"rdma_destroy_id with a nil context", dead.Destroy(noCtx), syscall.EINVAL},
		{"rdma_get_request with a nil context", second(dead.GetRequest(noCtx)), syscall.EINVAL},
		{"rdma_create_qp without attributes", dead.CreateQP(nil, nil), syscall.EINVAL},
		{"rdma_create_srq without attributes", dead.CreateSRQ(nil, nil), syscall.EINVAL},
		{"rdma_reject with 256 bytes", dead.Reject(make([]byte, 256)), syscall.EINVAL},
		{"rdma_connect with 256 bytes", dead.Connect(&rdmacm.ConnParam{PrivateData: make([]byte, 256)}), syscall.EINVAL},
		{"rdma_listen with a backlog past int", dead.Listen(1 << 40), syscall.EINVAL},
		{"a read of a nil channel", second((*cmChannel)(nil).TryGetEvent()), syscall.EINVAL},
		{"a read of a destroyed channel", second((&cmChannel{dead: true}).TryGetEvent()), syscall.EINVAL},
		{"a destroy of a destroyed channel", (&cmChannel{dead: true}).Destroy(), syscall.EINVAL},
		{"a destroy of a channel IDs use", (&cmChannel{ids: 1}).Destroy(), syscall.EBUSY},
		{"an ack of a nil event", (*cmEvent)(nil).Ack(), syscall.EINVAL},
		{"a second ack", (&cmEvent{acked: true}).Ack(), syscall.EINVAL},
		{"an ack of a synchronous ID's event", (&cmEvent{ownedByLib: true}).Ack(), syscall.EINVAL},
		{"rdma_create_id on a channel of another implementation", second(RDMACM().CreateID(otherChannel{}, nil, rdmacm.PSTCP)), syscall.EINVAL},
		{"rdma_create_ep without an answer", second(RDMACM().CreateEP(nil, nil, nil)), syscall.EINVAL},
	}
	for _, c := range cases {
		var e *Error
		if !errors.Is(c.err, c.errno) || !errors.As(c.err, &e) {
			t.Errorf("%s: %v, want a *cverbs.Error with %v", c.name, c.err, c.errno)
		}
	}
	if p := cmIPOf(netip.AddrPort{}); p.family != 0 {
		t.Fatal("the zero address has a family")
	}
}

func second[T any](_ T, err error) error { return err }

type otherChannel struct{ rdmacm.EventChannel }
