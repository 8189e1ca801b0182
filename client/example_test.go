package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc/status"

	"github.com/zkbridge/zkbridge/client"
	"github.com/zkbridge/zkbridge/server"
)

// startNode runs a one-node zkbridge in this process, its native API on a
// free loopback port, for the examples (a real program dials the cluster's
// --native-addr addresses instead).
func startNode() (nativeAddr string, stop func()) {
	dir, err := os.MkdirTemp("", "zkbridge-example-")
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	peer := ln.Addr().String()
	ln.Close()
	s, err := server.New(server.Config{DataDir: dir, ClientAddr: "127.0.0.1:0", NativeAddr: "127.0.0.1:0", PeerAddr: peer,
		AdminDisabled: true}, zerolog.Nop())
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		panic(err)
	}
	return s.NativeAddr(), func() { s.Stop(); os.RemoveAll(dir) }
}

// A member registers with a lease that keeps itself alive; a second
// registration of the same member is refused unless it names the holder's
// epoch, and then the first lease is lost.
func ExampleClient_Register() {
	addr, stop := startNode()
	defer stop()
	ctx := context.Background()
	c, err := client.Dial(ctx, []string{addr})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	lease, err := c.Register(ctx, client.RegisterSpec{Group: "workers", MemberID: "w1", Payload: []byte("host-a:9000"), TTL: 4 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Println("registered", lease.Path(), "with a TTL of", lease.TTL())

	_, err = c.Register(ctx, client.RegisterSpec{Group: "workers", MemberID: "w1", Payload: []byte("host-b:9000"), TTL: 4 * time.Second})
	var conflict *client.ConflictError
	if !errors.As(err, &conflict) {
		panic(err)
	}
	fmt.Println("refused: held at the first lease's epoch:", conflict.HolderEpoch == lease.Epoch())

	epoch := conflict.HolderEpoch
	successor, err := c.Register(ctx, client.RegisterSpec{Group: "workers", MemberID: "w1", Payload: []byte("host-b:9000"),
		TTL: 4 * time.Second, ExpectedEpoch: &epoch})
	if err != nil {
		panic(err)
	}
	defer successor.Close(ctx)
	<-lease.Lost()
	fmt.Println("first lease lost:", errors.Is(lease.Err(), client.ErrLeaseExpired))
	// Output:
	// registered /workers/ids/w1 with a TTL of 4s
	// refused: held at the first lease's epoch: true
	// first lease lost: true
}

// A watcher gets every change under its prefixes in order, whichever door
// (native or ZooKeeper) made it.
func ExampleClient_Watch() {
	addr, stop := startNode()
	defer stop()
	ctx := context.Background()
	c, err := client.Dial(ctx, []string{addr})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	if _, err := c.Put(ctx, "/app", nil); err != nil {
		panic(err)
	}
	w := c.Watch(ctx, []string{"/app"}, 0) // 0: from the oldest change retained
	defer w.Close()
	for _, data := range []string{"v1", "v2"} {
		if _, err := c.Put(ctx, "/app/config", []byte(data)); err != nil {
			panic(err)
		}
	}
	if err := c.Delete(ctx, "/app/config"); err != nil {
		panic(err)
	}
	for seen := 0; seen < 4; seen++ {
		ev := <-w.Events()
		for _, ch := range ev.Record.Changes {
			fmt.Printf("%s %s %q\n", ch.Type, ch.Path, ch.Data)
		}
	}
	// Output:
	// CHANGE_TYPE_CREATED /app ""
	// CHANGE_TYPE_CREATED /app/config "v1"
	// CHANGE_TYPE_DATA /app/config "v2"
	// CHANGE_TYPE_DELETED /app/config ""
}

// An IDAllocator reserves a block of ids at a time from a counter that
// Curator's DistributedAtomicLong can share.
func ExampleIDAllocator() {
	addr, stop := startNode()
	defer stop()
	ctx := context.Background()
	c, err := client.Dial(ctx, []string{addr})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	ids := client.NewIDAllocator(c, "/table_seqid", 100)
	for i := 0; i < 3; i++ {
		id, err := ids.Next(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println("id", id)
	}
	// The allocator holds 3..99; the next block starts at 100.
	first, last, err := c.AllocateID(ctx, "/table_seqid", 10)
	if err != nil {
		panic(err)
	}
	fmt.Println("block", first, "to", last)
	// Output:
	// id 0
	// id 1
	// id 2
	// block 100 to 109
}

// Put creates or replaces a znode, optionally at an expected version; Get
// reads it linearizably.
func ExampleClient_Put() {
	addr, stop := startNode()
	defer stop()
	ctx := context.Background()
	c, err := client.Dial(ctx, []string{addr})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	put, err := c.Put(ctx, "/config", []byte("v1"))
	if err != nil {
		panic(err)
	}
	fmt.Println("created:", put.Created, "version:", put.Stat.Version)
	put, err = c.Put(ctx, "/config", []byte("v2"), client.ExpectVersion(0))
	if err != nil {
		panic(err)
	}
	fmt.Println("created:", put.Created, "version:", put.Stat.Version)
	_, err = c.Put(ctx, "/config", []byte("v3"), client.ExpectVersion(0))
	fmt.Println("at a stale version:", status.Code(err))
	got, err := c.Get(ctx, "/config")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s, version %d\n", got.Data, got.Stat.Version)
	// Output:
	// created: true version: 0
	// created: false version: 1
	// at a stale version: Aborted
	// v2, version 1
}
