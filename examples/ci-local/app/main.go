// Command app is the service examples/ci-local builds, tests and deploys: an HTTP server that
// counts its visits in a Redis-compatible store.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
)

// version is set at build time (-ldflags -X main.version=...).
var version = "dev"

func main() {
	check := flag.String("check", "", "ping the store at this address and exit")
	flag.Parse()
	if *check != "" {
		if _, err := (&Store{Addr: *check}).Do("PING"); err != nil {
			log.Fatalf("store %s: %v", *check, err)
		}
		fmt.Printf("store %s answers\n", *check)
		return
	}
	addr := os.Getenv("APP_ADDR")
	if addr == "" {
		addr = ":8080"
	}
	var store *Store
	if a := os.Getenv("REDIS_ADDR"); a != "" {
		store = &Store{Addr: a}
	}
	log.Printf("app %s on %s", version, addr)
	log.Fatal(http.ListenAndServe(addr, handler(store)))
}

func handler(store *Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		visits := "uncounted"
		if store != nil {
			n, err := store.Do("INCR", "visits")
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			visits = n
		}
		fmt.Fprintf(w, "app %s, visit %s\n", version, visits)
	})
	return mux
}
