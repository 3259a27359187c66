// Package wire is what the worker and gantry-helper (the program in every step container of a
// containerized step group) say to each other over `kubectl exec`-style streams. It imports
// nothing beyond the standard library, so the helper stays a small static binary.
package wire

// Request is the first line the worker writes on the helper's stdin, as JSON. The helper then
// watches stdin: when it closes (the worker aborted the step, or died), the step's process
// group is killed.
type Request struct {
	// Shell is Sh, Bash, Python or Pwsh; Command the script it runs.
	Shell   string `json:"shell,omitempty"`
	Command string `json:"command,omitempty"`
	// Entrypoint and Args replace the shell for Plugin and Background steps (the image's own
	// program; Args are its arguments).
	Entrypoint []string          `json:"entrypoint,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	// Secrets maps placeholders in Command and Env values to the environment variables (from
	// the pod's Kubernetes Secret) whose values replace them inside the container.
	Secrets map[string]string `json:"secrets,omitempty"`
	// Outputs are the shell variables to read after the command ends.
	Outputs []string `json:"outputs,omitempty"`
	// Dir is the working directory (the shared workspace).
	Dir string `json:"dir,omitempty"`
	// Background starts the program and returns at once; it keeps running for the group, its
	// output going to the container's log.
	Background bool `json:"background,omitempty"`
	// Nonce marks the helper's result line on stdout.
	Nonce string `json:"nonce"`
	// GroupFile, when set, is where the helper records the command's process group ("PGID
	// START-TIME") while it runs, or for good for a background program: on a build machine,
	// whoever finds a workspace its worker left kills what it names.
	GroupFile string `json:"groupFile,omitempty"`
	// LogFile, when set, receives a background program's output (a pod's: the container's log).
	LogFile string `json:"logFile,omitempty"`
}

// Result is the helper's last stdout line, after ResultPrefix and the request's nonce.
type Result struct {
	ExitCode int               `json:"exitCode"`
	Signal   string            `json:"signal,omitempty"` // the signal that killed the command
	Outputs  map[string]string `json:"outputs,omitempty"`
	// Error is set when the helper could not run the command at all.
	Error string `json:"error,omitempty"`
	PID   int    `json:"pid,omitempty"` // a background step's process
}

// ResultPrefix starts the result line.
const ResultPrefix = "\x1egantry-result "

// SecretPrefix starts the names of the secret environment variables: the helper removes them
// from the environment of the commands it runs.
const SecretPrefix = "GANTRY_POD_SECRET_"

// Paths inside every step container.
const (
	// HelperDir is the volume holding the helper binary and the steps' scratch files.
	HelperDir = "/gantry"
	// Helper is the helper binary.
	Helper = HelperDir + "/bin/gantry-helper"
	// Workspace is the shared working directory of the group's steps.
	Workspace = "/harness"
)

// Environment of `gantry-helper build` (BuildAndPush steps), sent with the request and never in
// the pod spec: buildkitd's configuration (the registries that speak plain HTTP) and the Docker
// config holding the push credentials.
const (
	BuildConfigEnv = "GANTRY_BUILDKITD_CONFIG"
	BuildAuthEnv   = "GANTRY_BUILD_AUTH"
)
