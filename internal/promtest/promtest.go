// Package promtest starts a real Prometheus server for tests (hack/prometheus) scraping small
// metric servers the tests start on loopback: each an "instance" whose request and error rates
// the test sets and changes while it runs.
package promtest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/testproc"
)

// Instance is a metric server: it reports http_requests_total by code, counting requests at
// Rate per second of which ErrorRatio fail (code 500), from when it started. Start serves it.
type Instance struct {
	Name string // the value of its pod label in Prometheus
	Addr string // 127.0.0.1:PORT, reserved when made

	mu         sync.Mutex
	rate       float64
	errorRatio float64
	ok, errs   float64
	last       time.Time
	ln         net.Listener
	srv        *http.Server
}

// NewInstance reserves a loopback port for an instance that is not serving yet: Prometheus
// sees it down, with no series, until Start.
func NewInstance(name string, rate, errorRatio float64) (*Instance, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &Instance{Name: name, Addr: ln.Addr().String(), rate: rate, errorRatio: errorRatio, ln: ln}, nil
}

// Set changes the rates from now on.
func (in *Instance) Set(rate, errorRatio float64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.advance()
	in.rate, in.errorRatio = rate, errorRatio
}

func (in *Instance) advance() {
	now := time.Now()
	if !in.last.IsZero() {
		d := now.Sub(in.last).Seconds()
		in.errs += d * in.rate * in.errorRatio
		in.ok += d * in.rate * (1 - in.errorRatio)
	}
	in.last = now
}

// Start serves the metrics.
func (in *Instance) Start() {
	in.mu.Lock()
	in.last = time.Now()
	in.mu.Unlock()
	in.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		in.mu.Lock()
		in.advance()
		ok, errs := in.ok, in.errs
		in.mu.Unlock()
		fmt.Fprintf(w, "# TYPE http_requests_total counter\nhttp_requests_total{code=\"200\"} %g\nhttp_requests_total{code=\"500\"} %g\n", ok, errs)
	})}
	go in.srv.Serve(in.ln)
}

// Close stops serving.
func (in *Instance) Close() {
	if in.srv != nil {
		in.srv.Close()
	} else {
		in.ln.Close()
	}
}

// Server is a running Prometheus.
type Server struct {
	URL string // http://127.0.0.1:PORT
	*testproc.Daemon
}

// Start builds Prometheus if its cache is cold (minutes, once) and runs it on a free loopback
// port with its data in dir, scraping the instances every second (labels job=web and
// pod=NAME).
func Start(dir string, instances ...*Instance) (*Server, error) {
	bin, err := testproc.Built("prometheus")
	if err != nil {
		return nil, err
	}
	var targets strings.Builder
	for _, in := range instances {
		fmt.Fprintf(&targets, "      - targets: [%q]\n        labels: {pod: %q}\n", in.Addr, in.Name)
	}
	config := "global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: web\n    static_configs:\n" + targets.String()
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(config), 0o644); err != nil {
		return nil, err
	}
	port, err := freeport.Consecutive(1)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	d, err := testproc.StartDaemon("prometheus", filepath.Join(dir, "prometheus.log"), cmd)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + addr, Daemon: d}
	ready := func() error {
		resp, err := http.Get(s.URL + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/-/ready answered %s", resp.Status)
		}
		return nil
	}
	if err := d.Ready(time.Minute, 100*time.Millisecond, ready); err != nil {
		return nil, err
	}
	return s, nil
}
