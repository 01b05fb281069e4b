package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/config"
)

const deploymentAvailable = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 2}
spec: {replicas: 3, progressDeadlineSeconds: 600}
status:
  observedGeneration: 2
  replicas: 3
  updatedReplicas: 3
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`

const deploymentRolling = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 3}
spec: {replicas: 3, progressDeadlineSeconds: 600}
status:
  observedGeneration: 3
  replicas: 3
  updatedReplicas: 1
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: ReplicaSetUpdated}
`

const deploymentDeadline = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 3}
spec: {replicas: 3, progressDeadlineSeconds: 600}
status:
  observedGeneration: 3
  replicas: 4
  updatedReplicas: 1
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - type: Progressing
    status: "False"
    reason: ProgressDeadlineExceeded
    message: ReplicaSet "web-5d9f" has timed out progressing.
`

const jobRunning = `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: default, generation: 1}
spec: {completions: 1}
status: {startTime: "2024-05-01T12:00:00Z", active: 1}
`

const jobComplete = `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: default, generation: 1}
spec: {completions: 1}
status:
  startTime: "2024-05-01T12:00:00Z"
  succeeded: 1
  conditions:
  - {type: SuccessCriteriaMet, status: "True"}
  - {type: Complete, status: "True"}
`

const jobFailed = `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: default, generation: 1}
spec: {completions: 1}
status:
  startTime: "2024-05-01T12:00:00Z"
  failed: 7
  conditions:
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
`

var jobRule = []config.ReadinessRule{{Kind: "Job", Condition: "Complete", FailedCondition: "Failed"}}

var availableRule = []config.ReadinessRule{{Kind: "Database", APIVersion: "db.example.com/v1", Condition: "Available"}}

func TestChildStatus(t *testing.T) {
	tests := []struct {
		name  string
		obj   string // empty: no live object
		rules []config.ReadinessRule
		want  ChildState
	}{{
		name: "deployment available",
		obj:  deploymentAvailable,
		want: ChildState{Ready: true, Status: "Current", Message: "Deployment is available. Replicas: 3"},
	}, {
		name: "deployment rolling out",
		obj:  deploymentRolling,
		want: ChildState{Status: "InProgress", Message: "Updated: 1/3"},
	}, {
		name: "deployment past its progress deadline",
		obj:  deploymentDeadline,
		want: ChildState{Status: "Failed", Message: `Progress deadline exceeded: ReplicaSet "web-5d9f" has timed out progressing.`},
	}, {
		name: "deployment whose spec is not observed yet",
		obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 4}
spec: {replicas: 1}
status: {observedGeneration: 3, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1}
`,
		want: ChildState{Status: "InProgress", Message: "Deployment generation is 4, but latest observed generation is 3"},
	}, {
		name: "service",
		obj: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {type: ClusterIP, clusterIP: 10.96.0.12, ports: [{port: 80}]}
`,
		want: ChildState{Ready: true, Status: "Current", Message: "Service is ready"},
	}, {
		name: "configmap",
		obj: `
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: default}
data: {a: b}
`,
		want: ChildState{Ready: true, Status: "Current", Message: "Resource is always ready"},
	}, {
		name:  "job running, with a rule: kstatus would call it Current",
		obj:   jobRunning,
		rules: jobRule,
		want:  ChildState{Status: "InProgress", Message: "condition Complete not reported yet"},
	}, {
		name:  "job complete, with a rule",
		obj:   jobComplete,
		rules: jobRule,
		want:  ChildState{Ready: true, Status: "Current", Message: "condition Complete is True"},
	}, {
		name:  "job failed, with a rule",
		obj:   jobFailed,
		rules: jobRule,
		want: ChildState{Status: "Failed",
			Message: "condition Failed is True (BackoffLimitExceeded: Job has reached the specified backoff limit)"},
	}, {
		name: "custom resource with Ready True",
		obj: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: default, generation: 2}
status:
  observedGeneration: 2
  conditions: [{type: Ready, status: "True", reason: Reconciled}]
`,
		want: ChildState{Ready: true, Status: "Current", Message: "Resource is Ready"},
	}, {
		name: "custom resource with Ready False",
		obj: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: default, generation: 2}
status:
  observedGeneration: 2
  conditions: [{type: Ready, status: "False", reason: Waiting, message: waiting for the bucket}]
`,
		want: ChildState{Status: "InProgress", Message: "waiting for the bucket"},
	}, {
		name: "custom resource whose generation is not observed yet",
		obj: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: default, generation: 3}
status:
  observedGeneration: 2
  conditions: [{type: Ready, status: "True", reason: Reconciled}]
`,
		want: ChildState{Status: "InProgress", Message: "Widget generation is 3, but latest observed generation is 2"},
	}, {
		name:  "ignored by a rule: judged, but marked",
		obj:   deploymentRolling,
		rules: []config.ReadinessRule{{Kind: "Deployment", Ignore: true}},
		want:  ChildState{Status: "InProgress", Message: "ignored: Updated: 1/3", Ignored: true},
	}, {
		name: "most specific rule wins: the name rule over the kind rule",
		obj:  deploymentRolling,
		rules: []config.ReadinessRule{
			{Kind: "Deployment", Ignore: true},
			{Kind: "Deployment", Name: "web", Condition: "Available"},
		},
		want: ChildState{Ready: true, Status: "Current", Message: "condition Available is True (MinimumReplicasAvailable)"},
	}, {
		name:  "a rule for another apiVersion does not match",
		obj:   deploymentRolling,
		rules: []config.ReadinessRule{{Kind: "Deployment", APIVersion: "apps/v2", Ignore: true}},
		want:  ChildState{Status: "InProgress", Message: "Updated: 1/3"},
	}, {
		name: "condition rule on a custom kind: Available True",
		obj: `
apiVersion: db.example.com/v1
kind: Database
metadata: {name: db, namespace: default, generation: 5}
status:
  observedGeneration: 5
  conditions: [{type: Available, status: "True", reason: Serving}]
`,
		rules: availableRule,
		want:  ChildState{Ready: true, Status: "Current", Message: "condition Available is True (Serving)"},
	}, {
		name: "condition rule on a custom kind: Ready True is not enough",
		obj: `
apiVersion: db.example.com/v1
kind: Database
metadata: {name: db, namespace: default, generation: 5}
status:
  observedGeneration: 5
  conditions:
  - {type: Ready, status: "True"}
  - {type: Available, status: "False", reason: Provisioning, message: creating volume}
`,
		rules: availableRule,
		want:  ChildState{Status: "InProgress", Message: "condition Available is False (Provisioning: creating volume)"},
	}, {
		name: "condition rule on a custom kind: generation not observed",
		obj: `
apiVersion: db.example.com/v1
kind: Database
metadata: {name: db, namespace: default, generation: 6}
status:
  observedGeneration: 5
  conditions: [{type: Available, status: "True", reason: Serving}]
`,
		rules: availableRule,
		want:  ChildState{Status: "InProgress", Message: "Database generation is 6, but latest observed generation is 5"},
	}, {
		name: "being deleted, whatever the rules say",
		obj: `
apiVersion: db.example.com/v1
kind: Database
metadata: {name: db, namespace: default, deletionTimestamp: "2024-05-01T12:00:00Z", finalizers: [x]}
status:
  conditions: [{type: Available, status: "True"}]
`,
		rules: availableRule,
		want:  ChildState{Status: "Terminating", Message: "being deleted"},
	}, {
		name: "no live object",
		want: ChildState{Status: "NotFound", Message: "not found yet"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got ChildState
			if tt.obj == "" {
				got = ChildStatus(nil, tt.rules)
			} else {
				got = ChildStatus(obj(t, tt.obj), tt.rules)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ChildStatus() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
