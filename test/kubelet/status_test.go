package kubelet

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestDesiredStatus(t *testing.T) {
	type counts struct{ replicas, updated, ready, available, unavailable int32 }
	cases := map[string]struct {
		replicas      *int32
		phase         podPhase
		wantCounts    counts
		wantAvailable corev1.ConditionStatus
		wantReasons   [2]string
	}{
		"a ready process makes the Deployment available": {
			replicas: ptr.To[int32](1), phase: podPhase{exists: true, ready: true, hash: "h"},
			wantCounts: counts{1, 1, 1, 1, 0}, wantAvailable: corev1.ConditionTrue,
			wantReasons: [2]string{ReasonMinimumReplicasAvailable, ReasonNewReplicaSetAvailable},
		},
		"a process that is not ready leaves it unavailable and progressing": {
			replicas: ptr.To[int32](1), phase: podPhase{exists: true, hash: "h"},
			wantCounts: counts{1, 1, 0, 0, 1}, wantAvailable: corev1.ConditionFalse,
			wantReasons: [2]string{ReasonMinimumReplicasUnavailable, ReasonReplicaSetUpdated},
		},
		"no process yet": {
			phase:      podPhase{hash: "h"},
			wantCounts: counts{0, 0, 0, 0, 1}, wantAvailable: corev1.ConditionFalse,
			wantReasons: [2]string{ReasonMinimumReplicasUnavailable, ReasonReplicaSetUpdated},
		},
		"three desired replicas are played by one ready process": {
			replicas: ptr.To[int32](3), phase: podPhase{exists: true, ready: true, hash: "h"},
			wantCounts: counts{1, 1, 1, 1, 0}, wantAvailable: corev1.ConditionTrue,
			wantReasons: [2]string{ReasonMinimumReplicasAvailable, ReasonNewReplicaSetAvailable},
		},
		"scaled to zero is available with nothing running": {
			replicas: ptr.To[int32](0), phase: podPhase{hash: "h"},
			wantCounts: counts{0, 0, 0, 0, 0}, wantAvailable: corev1.ConditionTrue,
			wantReasons: [2]string{ReasonMinimumReplicasAvailable, ReasonNewReplicaSetAvailable},
		},
	}
	now := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 7}, Spec: appsv1.DeploymentSpec{Replicas: tc.replicas}}
			st := desiredStatus(d, tc.phase, now)
			got := counts{st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, st.UnavailableReplicas}
			if got != tc.wantCounts {
				t.Errorf("counts %+v, want %+v", got, tc.wantCounts)
			}
			if st.ObservedGeneration != 7 {
				t.Errorf("observedGeneration %d, want 7", st.ObservedGeneration)
			}
			if len(st.Conditions) != 2 || st.Conditions[0].Type != appsv1.DeploymentAvailable || st.Conditions[1].Type != appsv1.DeploymentProgressing {
				t.Fatalf("conditions %+v, want Available then Progressing", st.Conditions)
			}
			if st.Conditions[0].Status != tc.wantAvailable {
				t.Errorf("Available=%s, want %s", st.Conditions[0].Status, tc.wantAvailable)
			}
			if st.Conditions[1].Status != corev1.ConditionTrue {
				t.Errorf("Progressing=%s, want True", st.Conditions[1].Status)
			}
			if r := [2]string{st.Conditions[0].Reason, st.Conditions[1].Reason}; r != tc.wantReasons {
				t.Errorf("reasons %v, want %v", r, tc.wantReasons)
			}
		})
	}
}

func TestDesiredStatusKeepsTimesOfUnchangedConditions(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1}}
	t0 := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	d.Status = desiredStatus(d, podPhase{exists: true, hash: "h"}, t0)
	if again := desiredStatus(d, podPhase{exists: true, hash: "h"}, t1); !again.Conditions[0].LastTransitionTime.Equal(&t0) || !again.Conditions[1].LastUpdateTime.Equal(&t0) {
		t.Errorf("an unchanged status moved its times: %+v", again.Conditions)
	}
	ready := desiredStatus(d, podPhase{exists: true, ready: true, hash: "h"}, t1)
	if !ready.Conditions[0].LastTransitionTime.Equal(&t1) {
		t.Errorf("Available flipped but kept its transition time: %+v", ready.Conditions[0])
	}
	if p := ready.Conditions[1]; !p.LastTransitionTime.Equal(&t0) || !p.LastUpdateTime.Equal(&t1) {
		t.Errorf("Progressing changed reason only: want transition %v and update %v, got %+v", t0, t1, p)
	}
}

func TestProbePort(t *testing.T) {
	c := &corev1.Container{Name: "proxy", Ports: []corev1.ContainerPort{{Name: "management", ContainerPort: 9190}}}
	cases := map[string]struct {
		port    intstr.IntOrString
		want    int
		wantErr bool
	}{
		"a number":                      {port: intstr.FromInt32(8080), want: 8080},
		"a container port name":         {port: intstr.FromString("management"), want: 9190},
		"a numeric string":              {port: intstr.FromString("8081"), want: 8081},
		"an unknown name is an error":   {port: intstr.FromString("metrics"), wantErr: true},
		"an out-of-range port is wrong": {port: intstr.FromInt32(70000), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := probePort(c, tc.port)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("probePort = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestProberCountsTheKubeletsSuccessCodes(t *testing.T) {
	code := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || r.Header.Get("X-Probe") != "yes" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(code)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	c := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}, ReadinessProbe: &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http"),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}}},
	}}
	p := newProber(c, "")
	for _, tc := range []struct {
		code int
		want bool
	}{{200, true}, {204, true}, {302, true}, {404, false}, {503, false}} {
		code = tc.code
		if got, detail := p.check(t.Context()); got != tc.want {
			t.Errorf("HTTP %d: ready=%v (%s), want %v", tc.code, got, detail, tc.want)
		}
	}
}
