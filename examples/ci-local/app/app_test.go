package main

import (
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

func TestHealthz(t *testing.T) {
	rec := httptest.NewRecorder()
	handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 || rec.Body.String() != "ok\n" {
		t.Fatalf("%d %q", rec.Code, rec.Body)
	}
}

// TestVisitsCounted needs the store: REDIS_ADDR (the pipeline's Background service).
func TestVisitsCounted(t *testing.T) {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		t.Skip("REDIS_ADDR is not set")
	}
	s := &Store{Addr: addr}
	if _, err := s.Do("SET", "visits", "41"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler(s))
	defer srv.Close()
	r, err := srv.Client().Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(b), "visit 42") {
		t.Fatalf("answer %q, want visit 42", b)
	}
}
