// A grpc-go client for the integration tests, calling the lab server's /rpcscope.lab.Lab/Call with requests
// as raw bytes (no generated code needed).
//
//	goclient TARGET [CA_FILE]
//	    one call with an empty request (tst_connectproxy: grpc-go reads HTTPS_PROXY itself; the test sets it);
//	    with CA_FILE it speaks TLS, trusting only that CA certificate (a cert pool of its own, as a grpc-go
//	    client trusts the rpcscope CA); prints "call: <nil>" on success, or what failed.
//	goclient -retry [-deadline MS] [-timing] SERVICE_CONFIG_JSON TARGET CALL_ID REQUEST_HEX [...]
//	    one channel with that service config (an empty one: none), then one call after another, each with
//	    its id as rpcscope-call-id metadata and a deadline of MS (10000 unless given); prints "CALL_ID CODE"
//	    a line (tst_injectedvsreal), or with -timing "CALL_ID CODE ELAPSED_MS MESSAGE", the time the call
//	    took as the client saw it (tst_faultactions). grpc-go of this era retries only with GRPC_GO_RETRY=on
//	    in the environment. REQUEST_HEX+N appends a payload of N KiB (a later field 8 replaces an earlier
//	    one), for requests too long for an argument.
package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// rawCodec passes the bytes through: the lab's CallRequest and CallReply need no schema here.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error)      { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v interface{}) error { *(v.(*[]byte)) = data; return nil }
func (rawCodec) Name() string                               { return "proto" }

func retryCalls(args []string) int {
	flags := flag.NewFlagSet("retry", flag.ContinueOnError)
	deadlineMs := flags.Int("deadline", 10000, "each call's deadline in ms")
	timing := flags.Bool("timing", false, "print each call's time and status message")
	if flags.Parse(args) != nil {
		return 2
	}
	args = flags.Args()
	if len(args) < 4 || len(args)%2 != 0 || *deadlineMs <= 0 {
		fmt.Fprintln(os.Stderr,
			"usage: goclient -retry [-deadline MS] [-timing] SERVICE_CONFIG_JSON TARGET CALL_ID REQUEST_HEX ...")
		return 2
	}
	options := []grpc.DialOption{grpc.WithInsecure(), grpc.WithBlock()}
	if args[0] != "" {
		options = append(options, grpc.WithDefaultServiceConfig(args[0]))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	conn, err := grpc.DialContext(ctx, args[1], options...)
	cancel()
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer conn.Close()
	for i := 2; i < len(args); i += 2 {
		parts := strings.SplitN(args[i+1], "+", 2)
		in, err := hex.DecodeString(parts[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "request", args[i], "is not hex:", err)
			return 2
		}
		if len(parts) == 2 {
			kib, err := strconv.Atoi(parts[1])
			if err != nil || kib < 0 {
				fmt.Fprintln(os.Stderr, "request", args[i], "has a bad payload size:", parts[1])
				return 2
			}
			in = append(in, 0x42) // field 8, length-delimited
			in = binary.AppendUvarint(in, uint64(kib*1024))
			in = append(in, make([]byte, kib*1024)...)
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*deadlineMs)*time.Millisecond)
		ctx = metadata.AppendToOutgoingContext(ctx, "rpcscope-call-id", args[i])
		out := []byte{}
		err = conn.Invoke(ctx, "/rpcscope.lab.Lab/Call", &in, &out)
		elapsed := time.Since(start)
		cancel()
		if *timing {
			message := strings.ReplaceAll(status.Convert(err).Message(), "\n", " ")
			fmt.Printf("%s %d %.3f %s\n", args[i], int(status.Code(err)), elapsed.Seconds()*1000, message)
		} else {
			fmt.Println(args[i], int(status.Code(err)))
		}
	}
	return 0
}

func main() {
	encoding.RegisterCodec(rawCodec{})
	if len(os.Args) > 1 && os.Args[1] == "-retry" {
		os.Exit(retryCalls(os.Args[2:]))
	}
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
