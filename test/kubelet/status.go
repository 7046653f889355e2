package kubelet

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons, the deployment controller's own (k8s.io/kubernetes/pkg/controller/deployment/util),
// so code that reads Deployment status cannot tell the runner from the real thing.
const (
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	ReasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	ReasonReplicaSetUpdated          = "ReplicaSetUpdated"
)

// podPhase is what the status computation needs to know of the local process.
type podPhase struct {
	exists bool // a process runs (or is about to be restarted) for the current template
	ready  bool
	hash   string
}

// wantedReplicas is the number of processes the runner runs: the desired count capped at one.
// Several local replicas would fight over the same loopback ports, and one process stands in
// for all of them (any proxy replica serves any broker).
func wantedReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 {
		return 0
	}
	return 1
}

// desiredStatus computes the Deployment status the deployment controller would write if the
// one local process were all the replicas. Counts are the truth (at most one); Available is
// True once that process is ready, because it serves for every replica. Condition times are
// kept when nothing about a condition changed, so an unchanged status compares equal and is
// not written.
func desiredStatus(d *appsv1.Deployment, p podPhase, now metav1.Time) appsv1.DeploymentStatus {
	want := wantedReplicas(d)
	st := appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		CollisionCount:     d.Status.CollisionCount,
	}
	if want > 0 && p.exists {
		st.Replicas, st.UpdatedReplicas = 1, 1
		if p.ready {
			st.ReadyReplicas, st.AvailableReplicas = 1, 1
		}
	}
	st.UnavailableReplicas = want - st.AvailableReplicas

	rs := fmt.Sprintf("ReplicaSet %q", d.Name+"-"+p.hash)
	available := deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue,
		ReasonMinimumReplicasAvailable, "Deployment has minimum availability.")
	progressing := deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
		ReasonNewReplicaSetAvailable, rs+" has successfully progressed.")
	if st.AvailableReplicas < want {
		available = deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse,
			ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability.")
		progressing = deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
			ReasonReplicaSetUpdated, rs+" is progressing.")
	}
	if want == 0 {
		progressing.Message = "Deployment is scaled to zero."
	}
	// The deployment controller lists Available before Progressing once both exist.
	for _, c := range []appsv1.DeploymentCondition{available, progressing} {
		st.Conditions = append(st.Conditions, keepTimes(c, d.Status.Conditions, now))
	}
	return st
}

func deploymentCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, message string) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: message}
}

// keepTimes sets a condition's times as the deployment controller does: lastTransitionTime
// moves only when the status flips, lastUpdateTime whenever status, reason or message change.
func keepTimes(c appsv1.DeploymentCondition, old []appsv1.DeploymentCondition, now metav1.Time) appsv1.DeploymentCondition {
	c.LastTransitionTime, c.LastUpdateTime = now, now
	for _, o := range old {
		if o.Type != c.Type {
			continue
		}
		if o.Status == c.Status {
			c.LastTransitionTime = o.LastTransitionTime
			if o.Reason == c.Reason && o.Message == c.Message {
				c.LastUpdateTime = o.LastUpdateTime
			}
		}
	}
	return c
}
