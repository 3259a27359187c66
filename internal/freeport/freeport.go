// Package freeport finds free TCP ports on loopback for servers that tests and the embedded
// Temporal server start.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
)

// Ports returns n distinct ports that were free a moment ago.
func Ports(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var out []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// Consecutive returns the first of n consecutive free ports below the kernel's ephemeral range,
// for servers that take a base port and use the ones after it.
func Consecutive(n int) (int, error) {
	for try := 0; try < 200; try++ {
		base := 20000 + rand.IntN(12000)
		var ls []net.Listener
		ok := true
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			_ = l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports between 20000 and 32000", n)
}
