// A grpc-go client for tst_connectproxy: one unary call to the lab server's /rpcscope.lab.Lab/Call with an
// empty request, as raw bytes (no generated code needed). grpc-go reads HTTPS_PROXY itself; the test sets it.
// With a second argument it speaks TLS, trusting only the CA certificate in that file (a cert pool of its
// own, as a grpc-go client trusts the rpcscope CA). Prints "call: <nil>" on success, or what failed.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
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
	security := grpc.WithInsecure()
	if len(os.Args) > 2 {
		creds, err := credentials.NewClientTLSFromFile(os.Args[2], "")
		if err != nil {
			fmt.Println("ca:", err)
			os.Exit(1)
		}
		security = grpc.WithTransportCredentials(creds)
	}
	conn, err := grpc.DialContext(ctx, os.Args[1], security, grpc.WithBlock())
	if err != nil {
		fmt.Println("dial:", err)
		os.Exit(1)
	}
	defer conn.Close()
	in, out := []byte{}, []byte{}
	err = conn.Invoke(ctx, "/rpcscope.lab.Lab/Call", &in, &out)
	fmt.Println("call:", err)
}
