package container

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A podSpecOverlay changes the pod Gantry made, as the reference merges it: fields set, a
// container of Gantry's changed by name, no container added, init containers left alone.
func TestOverlay(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelManaged: managedBy}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: helperContainer, Image: "helper"}},
			Containers:     []corev1.Container{{Name: "step-a", Image: "busybox"}, {Name: "gantry", Image: "helper"}},
		}}
	err := overlay(pod, `
metadata:
  labels: {team: web, app.kubernetes.io/managed-by: someone}
spec:
  hostNetwork: true
  securityContext: {runAsGroup: 15}
  initContainers: [{name: extra, image: x}]
  containers:
    - name: step-a
      resources: {limits: {ephemeral-storage: 500Mi}}
    - name: sidecar
      image: nginx
`)
	if err != nil {
		t.Fatal(err)
	}
	s := pod.Spec
	if !s.HostNetwork || s.SecurityContext == nil || *s.SecurityContext.RunAsGroup != 15 {
		t.Errorf("spec fields not merged: %+v", s)
	}
	if len(s.Containers) != 2 || s.Containers[0].Image != "busybox" || s.Containers[0].Resources.Limits.StorageEphemeral().String() != "500Mi" {
		t.Errorf("containers %+v", s.Containers)
	}
	if len(s.InitContainers) != 1 || s.InitContainers[0].Name != helperContainer {
		t.Errorf("init containers changed: %+v", s.InitContainers)
	}
	if pod.Labels["team"] != "web" || pod.Labels[labelManaged] != managedBy {
		t.Errorf("labels %v", pod.Labels)
	}
	// A bare pod spec (the older form) merges the same way.
	if err := overlay(pod, "dnsPolicy: None\n"); err != nil || pod.Spec.DNSPolicy != corev1.DNSNone {
		t.Errorf("bare pod spec: %v %q", err, pod.Spec.DNSPolicy)
	}
	if err := overlay(pod, "- not a mapping\n"); err == nil {
		t.Error("a list was merged")
	}
}
