// A grpc-go client for tst_connectproxy: one unary call to the lab server's /rpcscope.lab.Lab/Call with an
// empty request, as raw bytes (no generated code needed). grpc-go reads HTTPS_PROXY itself; the test sets it.
// Prints "call: <nil>" on success, or what failed.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
)

// rawCodec passes the bytes through: the lab's CallRequest and CallReply need no schema here.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error)      { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v interface{}) error { *(v.(*[]byte)) = data; return nil }
func (rawCodec) Name() string                               { return "proto" }

func main() {
	encoding.RegisterCodec(rawCodec{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, os.Args[1], grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		fmt.Println("dial:", err)
		os.Exit(1)
	}
	defer conn.Close()
	in, out := []byte{}, []byte{}
	err = conn.Invoke(ctx, "/rpcscope.lab.Lab/Call", &in, &out)
	fmt.Println("call:", err)
}
