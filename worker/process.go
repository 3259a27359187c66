package worker

import (
	"fmt"
	"os"

	"github.com/go-logr/zapr"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"k8s.io/klog/v2"
)

// Process is what one `gantry worker` (or embedded worker) runs: the worker of the pipelines'
// task queue, with delegate tags one activity worker per subset of them, and as a build
// machine its session workers (BuildMachines).
type Process struct {
	main      sdkworker.Worker
	delegates []sdkworker.Worker
}

// Start wires and starts a worker process: the step workspace (Options.WorkDir) is created,
// client-go's own log lines (the containerized steps' exec streams, watches) go to
// Options.Log, and the main and delegate workers start. On an error nothing is left running.
func Start(c client.Client, o Options) (*Process, error) {
	if o.Log != nil {
		klog.SetLogger(zapr.NewLogger(o.Log.Named("client-go")))
	}
	if o.WorkDir != "" {
		if err := os.MkdirAll(o.WorkDir, 0o700); err != nil {
			return nil, fmt.Errorf("step workspace: %w", err)
		}
	}
	if o.BuildMachine {
		m, err := newMachine(o, c)
		if err != nil {
			return nil, fmt.Errorf("build machine: %w", err)
		}
		o.machine = m
	}
	p := &Process{main: New(c, o)}
	if err := p.main.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	delegates, err := Delegates(c, o)
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("--tags: %w", err)
	}
	for _, d := range delegates {
		if err := d.Start(); err != nil {
			p.Stop()
			return nil, fmt.Errorf("start delegate worker: %w", err)
		}
		p.delegates = append(p.delegates, d)
	}
	if o.BuildMachine {
		machines, err := BuildMachines(c, o)
		if err != nil {
			p.Stop()
			return nil, fmt.Errorf("build machine: %w", err)
		}
		for _, m := range machines {
			if err := m.Start(); err != nil {
				p.Stop()
				return nil, fmt.Errorf("start build machine worker: %w", err)
			}
			p.delegates = append(p.delegates, m)
		}
	}
	return p, nil
}

// Stop stops the delegate workers, then the main one; running steps get Options.StopTimeout
// to finish.
func (p *Process) Stop() {
	for _, d := range p.delegates {
		d.Stop()
	}
	p.main.Stop()
}
