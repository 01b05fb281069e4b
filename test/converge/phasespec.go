package main

import (
	"fmt"
	"strconv"
	"strings"
)

// phaseSpec is one entry of -phases: KIND[/R][@N]. A kind alone runs as
// the other flags say; /R (loom only) runs R replicas of loom run, with
// --sharded when R > 1, and @N creates N parents in the timed round
// instead of -parents.
type phaseSpec struct {
	kind string
	// text is the entry as written, spaces trimmed: the phase's label,
	// before its #n.
	text string
	// parents is the timed round's parents: @N, else -parents.
	parents int
	// replicas is how many loom run processes a loom phase runs: /R,
	// else -loom-replicas; 0 in a base phase.
	replicas int
	// sharded: the replicas run with --sharded (more than one, or
	// -loom-args turns it on) and share the 64 buckets of parents.
	sharded bool
	// remote: a loom phase written "remote": Loom runs -remote-templates,
	// whose ConfigMaps go to the workload cluster (remote.go).
	remote bool
}

// name is the phase's kind as -phases writes it: base, loom or remote.
// It prefixes the phase's namespace.
func (s phaseSpec) name() string {
	if s.remote {
		return kindRemote
	}
	return s.kind
}

// parsePhases parses -phases, filling what an entry leaves out from the
// other flags (parents, loomReplicas, loomArgs must be set).
func parsePhases(list string, o options) ([]phaseSpec, error) {
	var out []phaseSpec
	for _, entry := range strings.Split(list, ",") {
		s, err := parsePhase(strings.TrimSpace(entry), o)
		if err != nil {
			return nil, fmt.Errorf("-phases: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}

func parsePhase(text string, o options) (phaseSpec, error) {
	s := phaseSpec{text: text, parents: o.parents}
	rest, parents, hasParents := strings.Cut(text, "@")
	kind, replicas, hasReplicas := strings.Cut(rest, "/")
	if kind == kindRemote {
		kind, s.remote = kindLoom, true
	}
	s.kind = kind
	if kind != kindBase && kind != kindLoom {
		return s, fmt.Errorf("unknown phase %q (want base, loom or remote, then /REPLICAS and @PARENTS if needed: loom/3@30000)", text)
	}
	if hasParents {
		n, err := strconv.Atoi(parents)
		if err != nil || n < 1 {
			return s, fmt.Errorf("phase %q: @%s is not a number of parents of at least 1", text, parents)
		}
		s.parents = n
	}
	if kind == kindBase {
		if hasReplicas {
			return s, fmt.Errorf("phase %q: /REPLICAS is for loom and remote phases only", text)
		}
		return s, nil
	}
	s.replicas = o.loomReplicas
	if hasReplicas {
		n, err := strconv.Atoi(replicas)
		if err != nil || n < 1 {
			return s, fmt.Errorf("phase %q: /%s is not a number of replicas of at least 1", text, replicas)
		}
		s.replicas = n
	}
	s.sharded = s.replicas > 1 || boolFlag(o.loomArgs, shardedFlag)
	return s, nil
}

// maxReplicas is the most replicas any loom phase runs (0: no loom phase).
func maxReplicas(phases []phaseSpec) int {
	n := 0
	for _, s := range phases {
		n = max(n, s.replicas)
	}
	return n
}

// phaseList is -phases as given, for the log.
func phaseList(phases []phaseSpec) string {
	texts := make([]string, len(phases))
	for i, s := range phases {
		texts[i] = s.text
	}
	return strings.Join(texts, ",")
}

// parentsPerPhase says how many parents each phase creates: -parents,
// unless a -phases entry says its own (then reportPhases lists them).
func parentsPerPhase(o options) string {
	for _, s := range o.phases {
		if s.parents != o.parents {
			return "as many MyResources per phase as listed below"
		}
	}
	return fmt.Sprintf("%d MyResources per phase", o.parents)
}
