package container

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// A portProxy serves a Background container's portBindings on a build machine: it listens on
// a host port on loopback and relays each connection to the container's port in the stage's
// network, so that steps without an image, which run on the machine itself, reach the
// service at localhost:HOST_PORT, as the reference documents for them. A relay in the worker
// needs no firewall rules, and nothing of it outlives the stage (or the worker).
type portProxy struct {
	listener net.Listener
	target   string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	done   sync.WaitGroup
}

// portBinding is one host port and the container port it reaches.
type portBinding struct{ host, container int }

// parsePortBindings reads a Background step's portBindings: host port to container port.
func parsePortBindings(m map[string]text) ([]portBinding, error) {
	var out []portBinding
	for h, v := range m {
		c := string(v)
		hp, err1 := port(h)
		cp, err2 := port(c)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("portBindings %s: %s: %w", h, c, err)
		}
		out = append(out, portBinding{host: hp, container: cp})
	}
	return out, nil
}

func port(s string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%q is not a port number (1-65535)", s)
	}
	return p, nil
}

// listenPort starts relaying 127.0.0.1:hostPort to target (host:port).
func listenPort(hostPort int, target string) (*portProxy, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort)))
	if err != nil {
		return nil, err
	}
	p := &portProxy{listener: l, target: target, conns: map[net.Conn]struct{}{}}
	p.done.Add(1)
	go p.serve()
	return p, nil
}

func (p *portProxy) serve() {
	defer p.done.Done()
	for {
		c, err := p.listener.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.done.Add(1)
		go func() {
			defer p.done.Done()
			defer p.untrack(c)
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				return // the service is not listening (yet): the client sees the connection close
			}
			if !p.track(up) {
				up.Close()
				return
			}
			defer p.untrack(up)
			relay(c, up)
		}()
	}
}

// relay copies both ways until both directions ended, passing on each half-close.
func relay(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go pipe(a, b)
	go pipe(b, a)
	wg.Wait()
}

func (p *portProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *portProxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Close stops listening and ends the connections relayed.
func (p *portProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.listener.Close()
	p.done.Wait()
}
