// Command kv-server is the Redis-compatible store the local CI example's Background step runs
// (miniredis: an in-memory server speaking Redis's protocol), so that the example needs no
// image from the internet.
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/alicebob/miniredis/v2"
)

func main() {
	addr := flag.String("listen", ":6379", "address to serve on")
	flag.Parse()
	s := miniredis.NewMiniRedis()
	if err := s.StartAddr(*addr); err != nil {
		log.Fatal(err)
	}
	log.Printf("kv-server: Redis protocol on %s", s.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	s.Close()
}
