// Package e2e holds Gantry's end-to-end tests and benchmarks: pipelines run by the real engine
// on a real Temporal server, against real Kubernetes, Git, registry, S3, SMTP and SSH servers
// on loopback, the SIGKILL and topology tests, and the recording of replay histories.
package e2e
