package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"

	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
)

func encryptedPipeline(id string) string {
	return `pipeline:
  name: encrypted
  identifier: ` + id + `
  variables:
    - {name: note, type: String, value: pipeline-var-5e2b}
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: use
                  identifier: use
                  spec:
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: |
                          MARK=marker-output-7f3a
                          TOKEN=$(echo c2VjcmV0LW91dHB1dC05YzFk | base64 -d) # computed: not in the pipeline text
                          echo "using $PASS for <+pipeline.variables.note>"
                    environmentVariables:
                      - {name: PASS, type: Secret, value: enc_password}
                    outputVariables:
                      - {name: mark, type: String, value: MARK}
                      - {name: token, type: Secret, value: TOKEN}
`
}

// rawHistory returns every event of the executions' histories as stored, in protobuf binary
// form: payload bytes appear there as they are at rest.
func rawHistory(t *testing.T, ids ...string) []byte {
	t.Helper()
	var all bytes.Buffer
	for _, id := range ids {
		iter := env.client.GetWorkflowHistory(context.Background(), id, "", false, 0)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := proto.Marshal(ev)
			all.Write(b)
		}
	}
	return all.Bytes()
}

// encryptedEngine is a client, worker and starter on queue whose payloads a new random key
// seals; the worker stops when the test ends.
func encryptedEngine(t *testing.T, queue string) (*codec.Codec, *starter.Starter) {
	t.Helper()
	raw := make([]byte, 32)
	rand.Read(raw)
	keys, err := codec.NewKeys("k1", map[string][]byte{"k1": raw})
	if err != nil {
		t.Fatal(err)
	}
	c := &codec.Codec{Keys: keys}
	cc, err := client.Dial(client.Options{HostPort: env.srv.Address, Namespace: env.srv.Namespace, Logger: quiet{}, DataConverter: c.DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	ic := internalOf(t, cc)
	w := worker.New(cc, worker.Options{TaskQueue: queue, Logs: env.logs, Secrets: &secrets.Store{}, Internal: ic})
	if err := w.Start(); err != nil {
		cc.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(); cc.Close() })
	return c, &starter.Starter{Client: cc, Internal: ic, TaskQueue: queue}
}

// With the payload codec on, step inputs and outputs, variables and secret material are
// ciphertext in history; without it (the control run) the plain values are there.
func TestEncryptedHistory(t *testing.T) {
	t.Setenv(secrets.EnvName("enc_password"), "hunter2-encrypted-run")
	_, encrypted := encryptedEngine(t, "gantry-encrypted")

	plaintexts := []string{"hunter2-encrypted-run", "marker-output-7f3a", "pipeline-var-5e2b", "secret-output-9c1d"}
	exec, res := runPlan(t, encrypted, compile(t, "enc.yaml", []byte(encryptedPipeline("encrypted_run")), load.Options{}))
	if res.Status != status.Succeeded || res.Tree.Find("s.use").Outputs["outputVariables"].(map[string]any)["mark"] != "marker-output-7f3a" {
		t.Fatalf("encrypted run: %s %v", res.Status, res.Tree.Find("s.use").Outputs)
	}
	hist := rawHistory(t, exec.ID, exec.ID+"/s")
	for _, p := range plaintexts {
		if bytes.Contains(hist, []byte(p)) {
			t.Errorf("%q is in the encrypted execution's history", p)
		}
	}
	if !bytes.Contains(hist, []byte(codec.Encoding)) {
		t.Error("no encrypted payloads in history")
	}

	// Control: the same pipeline without the codec leaves its plain values in history, so the
	// check above can fail.
	exec, _ = runPlan(t, env.starter, compile(t, "plain.yaml", []byte(encryptedPipeline("plain_run")), load.Options{}))
	hist = rawHistory(t, exec.ID, exec.ID+"/s")
	if !bytes.Contains(hist, []byte("marker-output-7f3a")) || !bytes.Contains(hist, []byte("pipeline-var-5e2b")) {
		t.Error("control run: plain values not found in history; the check cannot fail")
	}
	for _, p := range []string{"hunter2-encrypted-run", "secret-output-9c1d"} {
		if bytes.Contains(hist, []byte(p)) {
			t.Errorf("secret %q in the unencrypted history", p)
		}
	}
}
