package k8s

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// The release history is kept in the cluster, in a Secret per release name (a Secret because
// the recorded manifests may hold Secret objects), so the last successful release is known to
// any worker and survives Gantry itself.

// Release statuses.
const (
	ReleaseInProgress = "InProgress"
	ReleaseSucceeded  = "Succeeded"
	ReleaseFailed     = "Failed"
	ReleaseRolledBack = "RolledBack"
)

// MaxReleases is how many releases the history keeps.
const MaxReleases = 10

// Release is one deployment of a release name.
type Release struct {
	Number      int    `json:"number"`
	Status      string `json:"status"`
	ExecutionID string `json:"executionId"`
	StepPath    string `json:"stepPath"`
	// Objects are the rendered objects applied, for rollback and pruning.
	Objects []map[string]any `json:"objects"`
}

// History is a release name's releases, oldest first.
type History struct {
	Releases []Release `json:"releases"`
	secret   *corev1.Secret
}

func historyName(release string) string { return "gantry-release-" + release }

func (s *stepRun) loadHistory() (*History, error) {
	sec, err := s.c.cs.CoreV1().Secrets(s.in.Namespace).Get(s.ctx, historyName(s.in.ReleaseName), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &History{}, nil
	}
	if err != nil {
		return nil, classify(s.ctx, err, "read release history %s/%s", s.in.Namespace, historyName(s.in.ReleaseName))
	}
	h := &History{secret: sec}
	zr, err := gzip.NewReader(bytes.NewReader(sec.Data["history"]))
	if err == nil {
		var b []byte
		if b, err = io.ReadAll(zr); err == nil {
			err = utiljson.Unmarshal(b, h) // whole numbers stay int64
		}
	}
	if err != nil {
		s.logf("release history %s is unreadable (%v); starting a new one", historyName(s.in.ReleaseName), err)
		return &History{secret: sec}, nil
	}
	return h, nil
}

// save writes the history, dropping the oldest releases beyond MaxReleases. It uses ctx, not
// the step's: a failed release must be recorded even when the step's own time ran out.
func (s *stepRun) saveHistory(ctx context.Context, h *History) error {
	if n := len(h.Releases); n > MaxReleases {
		h.Releases = h.Releases[n-MaxReleases:]
	}
	b, _ := json.Marshal(h)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	secrets := s.c.cs.CoreV1().Secrets(s.in.Namespace)
	if h.secret == nil {
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: historyName(s.in.ReleaseName), Namespace: s.in.Namespace,
				Labels: map[string]string{LabelRelease: s.in.ReleaseName, "gantry.io/release-history": "true"}},
			Type: "gantry.io/release-history",
			Data: map[string][]byte{"history": buf.Bytes()},
		}
		created, err := secrets.Create(ctx, sec, metav1.CreateOptions{})
		if err != nil {
			return classify(ctx, err, "record release history %s/%s", s.in.Namespace, sec.Name)
		}
		h.secret = created
		return nil
	}
	h.secret.Data = map[string][]byte{"history": buf.Bytes()}
	updated, err := secrets.Update(ctx, h.secret, metav1.UpdateOptions{})
	if err != nil {
		return classify(ctx, err, "record release history %s/%s", s.in.Namespace, h.secret.Name)
	}
	h.secret = updated
	return nil
}

// Latest is the newest release, or nil.
func (h *History) Latest() *Release {
	if len(h.Releases) == 0 {
		return nil
	}
	return &h.Releases[len(h.Releases)-1]
}

// LastSucceeded is the newest succeeded release before number, or nil.
func (h *History) LastSucceeded(before int) *Release {
	for i := len(h.Releases) - 1; i >= 0; i-- {
		if r := &h.Releases[i]; r.Number < before && r.Status == ReleaseSucceeded {
			return r
		}
	}
	return nil
}

// Next is the next release number.
func (h *History) Next() int {
	if l := h.Latest(); l != nil {
		return l.Number + 1
	}
	return 1
}

func record(objs []*object) []map[string]any {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.Object.Unstructured.Object
	}
	return out
}

// objectsOf maps a recorded release's objects again.
func (s *stepRun) objectsOf(r *Release) ([]*object, error) {
	var out []*object
	for _, m := range r.Objects {
		u := &unstructured.Unstructured{Object: m}
		o, err := s.mapObject(manifestsObject("release "+itoa(r.Number), u))
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}
