package main

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
)

// The loom run flags the harness reads from -loom-args or sets itself.
const (
	metricsFlag = "metrics-bind-address"
	// webhookFlag and defaultWebhookAddr are loom run's conversion
	// webhook's: the shipped set serves several versions, so every replica
	// listens on it.
	webhookFlag        = "webhook-bind-address"
	defaultWebhookAddr = ":9443"
	// bindSuffix ends the name of every flag loom run listens on
	// (--metrics-bind-address, --pprof-bind-address): each replica of a
	// sharded phase gets ports of its own.
	bindSuffix     = "-bind-address"
	shardedFlag    = "sharded"
	shardNSFlag    = "shard-namespace"
	defaultShardNS = "loom-system"
)

// flagValue is the value of --name in args, the last one given, as
// "--name V" or "--name=V"; given is false when args do not set it. A
// token without a leading dash is a value, never a flag.
func flagValue(args []string, name string) (value string, given bool) {
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		if len(a) == len(args[i]) {
			continue // not a flag
		}
		switch {
		case a == name && i+1 < len(args):
			value, given = args[i+1], true
			i++
		case strings.HasPrefix(a, name+"="):
			value, given = strings.TrimPrefix(a, name+"="), true
		}
	}
	return value, given
}

// boolFlag is whether args turn the boolean flag --name on: "--name" or
// "--name=true", the last one given.
func boolFlag(args []string, name string) bool {
	on := false
	for _, arg := range args {
		a := strings.TrimLeft(arg, "-")
		if len(a) == len(arg) {
			continue
		}
		if a == name {
			on = true
		} else if v, ok := strings.CutPrefix(a, name+"="); ok {
			on, _ = strconv.ParseBool(v)
		}
	}
	return on
}

// metricsAddress is the --metrics-bind-address that loom run gets from
// args: the last one given, or its default. Process mode needs it.
func metricsAddress(args []string) (string, error) {
	addr, given := flagValue(args, metricsFlag)
	if !given {
		addr = defaultMetricsAddr
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" || port == "0" {
		if given && addr == "" {
			return "", errors.New("-loom-args: process mode scrapes Loom's /metrics; do not disable --metrics-bind-address")
		}
		return "", fmt.Errorf("-loom-args: --metrics-bind-address %q is not host:port with a fixed port", addr)
	}
	return addr, nil
}

// shiftPort is addr with its port moved up by i; an address without a
// fixed port (empty, no port, port 0) is returned as it is.
func shiftPort(addr string, i int) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	n, err := strconv.Atoi(port)
	if err != nil || n == 0 {
		return addr
	}
	return net.JoinHostPort(host, strconv.Itoa(n+i))
}

// replicaArgs are the arguments of `loom run` (after run) for replica i,
// from 0, of a loom phase: args as they are for replica 0, so that one
// unsharded replica runs exactly as -loom-args say; for a later replica,
// every --*-bind-address with a fixed port moved up by i, and
// --metrics-bind-address and --webhook-bind-address added when args leave
// them at their defaults. A
// sharded phase's replicas get --sharded unless args already turn it on,
// --shard-id-prefix converge-<i+1> unless args set one (a takeover tells
// the replicas' buckets apart by it), and --shard-namespace loom-system
// unless args set one (loom run has no default out of a pod).
func replicaArgs(args []string, i int, sharded bool) []string {
	out := make([]string, 0, len(args)+2)
	metricsGiven, webhookGiven := false, false
	for j := 0; j < len(args); j++ {
		a := strings.TrimLeft(args[j], "-")
		name, value, eq := strings.Cut(a, "=")
		if i == 0 || len(a) == len(args[j]) || !strings.HasSuffix(name, bindSuffix) {
			out = append(out, args[j])
			continue
		}
		if !eq {
			if j+1 == len(args) {
				out = append(out, args[j]) // no value: loom run says so
				continue
			}
			j++
			value = args[j]
		}
		metricsGiven = metricsGiven || name == metricsFlag
		webhookGiven = webhookGiven || name == webhookFlag
		out = append(out, "--"+name+"="+shiftPort(value, i))
	}
	if i > 0 && !metricsGiven {
		out = append(out, "--"+metricsFlag+"="+shiftPort(defaultMetricsAddr, i))
	}
	if i > 0 && !webhookGiven {
		out = append(out, "--"+webhookFlag+"="+shiftPort(defaultWebhookAddr, i))
	}
	if sharded && !boolFlag(args, shardedFlag) {
		out = append(out, "--"+shardedFlag)
	}
	if _, given := flagValue(args, shardPrefixFlag); sharded && !given {
		out = append(out, "--"+shardPrefixFlag+"="+replicaPrefix(i))
	}
	if _, given := flagValue(args, shardNSFlag); sharded && !given {
		out = append(out, "--"+shardNSFlag+"="+defaultShardNS)
	}
	return out
}

// checkReplicaPorts fails if two of n replicas would listen on one port:
// each replica's --*-bind-address ports, moved up by its index, must not
// meet another replica's, nor another flag's.
func checkReplicaPorts(args []string, n int) error {
	seen := map[string]string{} // port → "replica i --flag"
	for i := range n {
		ra := replicaArgs(args, i, false)
		addrs := map[string]string{metricsFlag: shiftPort(defaultMetricsAddr, i)}
		for j := 0; j < len(ra); j++ {
			a := strings.TrimLeft(ra[j], "-")
			name, value, eq := strings.Cut(a, "=")
			if len(a) == len(ra[j]) || !strings.HasSuffix(name, bindSuffix) {
				continue
			}
			if !eq && j+1 < len(ra) {
				j++
				value = ra[j]
			}
			addrs[name] = value
		}
		for _, name := range slices.Sorted(maps.Keys(addrs)) {
			_, port, err := net.SplitHostPort(addrs[name])
			if err != nil || port == "" || port == "0" {
				continue
			}
			who := fmt.Sprintf("replica %d's --%s", i+1, name)
			if other, ok := seen[port]; ok {
				return fmt.Errorf("-loom-args: %s and %s would both listen on port %s; with %d replicas each replica's ports are the given ones plus its index, so leave %d ports free above each", other, who, port, n, n-1)
			}
			seen[port] = who
		}
	}
	return nil
}

// loomOptions are the options the phase starts loom run with: -loom-args,
// and with -loom-namespace the phase's namespace as --namespace.
func (p *phase) loomOptions() options {
	o := p.opts
	if o.loomNamespace {
		o.loomArgs = append(slices.Clone(o.loomArgs), "--namespace="+p.namespace)
	}
	return o
}
