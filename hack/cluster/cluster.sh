#!/usr/bin/env bash
# cluster.sh - a local Kubernetes control plane for Loom's tests, without Docker.
#
# Runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
# (which fakes a kubelet-less node, so pods "run" without containers) as plain
# background processes. Binaries go to $ROOT/bin, all state to $ROOT/.cluster.
#
# Usage: hack/cluster/cluster.sh build|up|down [--keep-state]|restart NAME|stop NAME|start NAME|compact|snapshot DIR|restore DIR|status|env
#
# CLUSTER_COMPONENTS (default "etcd kube-apiserver kube-controller-manager
# kube-scheduler kwok") picks what up, status and restart run, always in that
# start order; etcd and kube-apiserver are required. CLUSTER_STATE (default
# $ROOT/.cluster) is the state folder, so a second cluster, on ports of its
# own, can run beside the first: every command acts only on the processes of
# its state folder, and down stops all of them whatever CLUSTER_COMPONENTS says.
# CLUSTER_BIN (default $ROOT/bin) is where the binaries are, for a script run
# from another checkout than the one that started the cluster.
# CLUSTER_APISERVER_FEATURE_GATES (default ShardedListAndWatch=true, the
# server-side shard selector of KEP-5866 that loom run --sharded uses) is the
# kube-apiserver's --feature-gates; set it to "" for a server without it.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${CLUSTER_BIN:-$ROOT/bin}
STATE=${CLUSTER_STATE:-$ROOT/.cluster}
[[ $STATE == /* ]] || STATE=$PWD/$STATE
LOGS=$STATE/logs
PIDS=$STATE/pids
KUBECONFIG_FILE=$STATE/kubeconfig
CERTS=$STATE/apiserver-certs

ETCD_PORT=${CLUSTER_ETCD_PORT:-23790}
ETCD_PEER_PORT=${CLUSTER_ETCD_PEER_PORT:-23800}
APISERVER_PORT=${CLUSTER_APISERVER_PORT:-16443}
TIMEOUT=${CLUSTER_TIMEOUT:-60}  # seconds each readiness wait may take
KWOK_VERSION=v0.7.0
NODE_NAME=kwok-node-0
ALL_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok) # start order

log() { echo "cluster: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
k() { kubectl --kubeconfig "$KUBECONFIG_FILE" --request-timeout=5s "$@"; }

# components: the names in CLUSTER_COMPONENTS, checked, in start order.
components() {
  local want=" ${CLUSTER_COMPONENTS:-${ALL_COMPONENTS[*]}} " name
  for name in $want; do
    [[ " ${ALL_COMPONENTS[*]} " == *" $name "* ]] || die "CLUSTER_COMPONENTS: unknown component '$name' (known: ${ALL_COMPONENTS[*]})"
  done
  for name in etcd kube-apiserver; do
    [[ $want == *" $name "* ]] || die "CLUSTER_COMPONENTS must include $name"
  done
  for name in "${ALL_COMPONENTS[@]}"; do
    if [[ $want == *" $name "* ]]; then echo "$name"; fi
  done
}
mapfile -t COMPONENTS < <(components)
((${#COMPONENTS[@]})) || exit 1 # components died: its message is printed
has() { [[ " ${COMPONENTS[*]} " == *" $1 "* ]]; }

# ---------------------------------------------------------------- build ----

# ensure_tools installs curl/openssl if missing (fresh CI machines) and checks go/kubectl.
ensure_tools() {
  local missing=() t
  for t in curl openssl; do command -v "$t" >/dev/null || missing+=("$t"); done
  if ((${#missing[@]})); then
    log "installing ${missing[*]} with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  for t in go kubectl setsid flock; do command -v "$t" >/dev/null || die "$t is required but not installed"; done
}

# build_bin NAME PKG: go build PKG (pinned by hack/cluster/go.mod) to bin/NAME,
# unless bin/NAME is already newer than go.mod.
build_bin() {
  local name=$1 pkg=$2
  [[ -x $BIN/$name && $BIN/$name -nt $HERE/go.mod ]] && return 0
  local kver mm v=k8s.io/component-base/version ldflags=""
  if [[ $pkg == k8s.io/kubernetes/* ]]; then # stamp the version (else /version says v0.0.0-master)
    kver=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$HERE/go.mod") # e.g. v1.36.3
    mm=${kver#v} && mm=${mm%.*}                                                 # e.g. 1.36
    ldflags="-X $v.gitVersion=$kver -X $v.gitMajor=${mm%%.*} -X $v.gitMinor=${mm#*.} -X $v.gitTreeState=clean"
  fi
  log "building bin/$name ($pkg)"
  (cd "$HERE" && GOWORK=off go build -ldflags "$ldflags" -o "$BIN/$name" "$pkg")
}

cmd_build() {
  ensure_tools
  mkdir -p "$BIN"
  build_bin etcd go.etcd.io/etcd/server/v3
  build_bin kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
  build_bin kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
  build_bin kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
  if ! "$BIN/kwok" --version 2>/dev/null | grep -qF "$KWOK_VERSION"; then
    log "installing bin/kwok ($KWOK_VERSION)"
    # Outside any module, so kwok resolves its own dependencies.
    (cd /tmp && GOWORK=off GOFLAGS=-mod=mod GOBIN=$BIN go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
  fi
}

# ------------------------------------------------------------ processes ----

pid_of() { cat "$PIDS/$1.pid" 2>/dev/null || true; }

# alive NAME: the pid in NAME's pid file is running bin/NAME (not a reused pid, not a zombie).
alive() {
  local pid cmd
  pid=$(pid_of "$1")
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ $cmd == "$BIN/$1 "* ]]
}

# start NAME ARGS...: run bin/NAME in its own session, detached from this script,
# logging to .cluster/logs/NAME.log; the process writes its own pid file before exec.
# It inherits no descriptor but 0-2: a component restarted by a test run under
# `flock FILE go test ...` would otherwise hold that lock for as long as it runs.
start() {
  local name=$1; shift
  log "starting $name"
  rm -f "$PIDS/$name.pid"
  # shellcheck disable=SC2016 # $$ and $@ are expanded by the inner bash
  setsid nohup bash -c 'echo $$ >"$0"
    for fd in /proc/$$/fd/*; do fd=${fd##*/}; ((fd > 2)) && eval "exec $fd>&-" 2>/dev/null; done
    exec "$@"' "$PIDS/$name.pid" "$BIN/$name" "$@" \
    </dev/null >"$LOGS/$name.log" 2>&1 9>&- & # 9>&-: don't inherit the lock
  local i
  for i in {1..50}; do alive "$name" && return 0; sleep 0.1; done
  fail "$name exited right after start" "$name"
}

# stop NAME: SIGTERM, wait up to 10 s, then SIGKILL; removes the pid file.
stop() {
  local name=$1 pid i
  pid=$(pid_of "$name")
  if alive "$name"; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in {1..100}; do alive "$name" || break; sleep 0.1; done
    if alive "$name"; then log "$name ($pid) ignored SIGTERM, killing"; kill -KILL "$pid" 2>/dev/null || true; fi
    for i in {1..20}; do alive "$name" || break; sleep 0.1; done
    log "stopped $name ($pid)"
  fi
  rm -f "$PIDS/$name.pid"
}

# stop_all stops every component of this state folder, chosen or not.
stop_all() {
  local i
  for ((i = ${#ALL_COMPONENTS[@]} - 1; i >= 0; i--)); do stop "${ALL_COMPONENTS[i]}"; done
}

# fail MSG [NAME]: print the error and the tail of NAME's log, stop everything, exit 1.
fail() {
  trap - INT TERM
  log "ERROR: $1"
  if [[ -n ${2:-} && -s $LOGS/$2.log ]]; then
    log "last 30 lines of $LOGS/$2.log:"
    tail -n 30 "$LOGS/$2.log" | sed 's/^/    /' >&2
  fi
  log "stopping everything that was started (logs are kept in $LOGS)"
  stop_all
  exit 1
}

# wait_for NAME WHAT CMD...: poll CMD until it succeeds; fail if NAME dies or TIMEOUT passes.
wait_for() {
  local name=$1 what=$2 deadline=$((SECONDS + TIMEOUT))
  shift 2
  until "$@" >/dev/null 2>&1; do
    alive "$name" || fail "$name exited before $what" "$name"
    ((SECONDS < deadline)) || fail "$name: no $what after ${TIMEOUT}s" "$name"
    sleep 0.3
  done
}

# port_free PORT: nothing accepts connections on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# orphans: pids running one of our binaries on this state folder (every
# component names a path in it) that no pid file tracks. A cluster on
# another state folder is not ours.
orphans() {
  local f pid cmd name
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}; pid=${pid%/cmdline}
    cmd=$(tr '\0' ' ' 2>/dev/null <"$f") || continue # 2> first: a process that just exited makes the redirect fail
    [[ $cmd == *" $STATE/"* ]] || continue
    for name in "${ALL_COMPONENTS[@]}"; do
      if [[ $cmd == "$BIN/$name "* && $pid != "$(pid_of "$name")" ]]; then echo "$pid"; fi
    done
  done
}

# ---------------------------------------------------------------- state ----

all_alive() {
  local name
  for name in "${COMPONENTS[@]}"; do alive "$name" || return 1; done
}

healthy() { all_alive && [[ $(k get --raw /readyz 2>/dev/null) == ok ]]; }

apiserver_ready() { curl -fsk -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$APISERVER_PORT/readyz"; }
node_ready() { [[ $(k get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]; }

# make_secrets: admin token (group system:masters) and the service-account signing key; kept across restarts.
make_secrets() {
  [[ -s $STATE/admin.token ]] || openssl rand -hex 32 >"$STATE/admin.token"
  TOKEN=$(<"$STATE/admin.token")
  echo "$TOKEN,admin,admin,system:masters" >"$STATE/tokens.csv"
  [[ -s $STATE/sa.key ]] || openssl genrsa -out "$STATE/sa.key" 2048 2>/dev/null
}

# write_kubeconfig: admin token + the CA of the apiserver's self-signed cert (in its --cert-dir).
write_kubeconfig() {
  local ca
  ca=$(openssl base64 -A <"$CERTS/apiserver.crt")
  cat >"$KUBECONFIG_FILE.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: loom
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $ca
users:
- name: admin
  user:
    token: $TOKEN
contexts:
- name: loom
  context: {cluster: loom, user: admin}
current-context: loom
EOF
  mv "$KUBECONFIG_FILE.tmp" "$KUBECONFIG_FILE"
}

# The fake node kwok manages (selected by annotation); no taints, so ordinary pods land on it.
NODE_YAML="apiVersion: v1
kind: Node
metadata:
  name: $NODE_NAME
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: '0'}
  labels: {type: kwok, kubernetes.io/hostname: $NODE_NAME, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
status:
  allocatable: {cpu: '1000', memory: 4Ti, pods: '10000'}
  capacity: {cpu: '1000', memory: 4Ti, pods: '10000'}"

# ----------------------------------------------------------- components ----
# start_<component> starts one component with its flags and waits until it
# is ready. `up` calls them in COMPONENTS order; `restart` calls one.

ETCD_URL=http://127.0.0.1:$ETCD_PORT
ETCD_PEER_URL=http://127.0.0.1:$ETCD_PEER_PORT
# Flags the controller-manager and the scheduler share.
CLIENT_FLAGS=(--kubeconfig "$KUBECONFIG_FILE" --leader-elect=false --secure-port 0 --kube-api-qps 500 --kube-api-burst 1000)

start_etcd() {
  start etcd --name loom --data-dir "$STATE/etcd" --unsafe-no-fsync --log-level warn \
    --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
    --listen-peer-urls "$ETCD_PEER_URL" --initial-advertise-peer-urls "$ETCD_PEER_URL" --initial-cluster "loom=$ETCD_PEER_URL"
  wait_for etcd "health" curl -fs "$ETCD_URL/health"
}

start_kube_apiserver() {
  start kube-apiserver --etcd-servers "$ETCD_URL" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" --cert-dir "$CERTS" \
    --token-auth-file "$STATE/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$STATE/sa.key" --service-account-signing-key-file "$STATE/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 --allow-privileged \
    --disable-admission-plugins ServiceAccount,TaintNodesByCondition \
    --enable-admission-plugins OwnerReferencesPermissionEnforcement \
    --max-requests-inflight 2000 --max-mutating-requests-inflight 1000 \
    --feature-gates "${CLUSTER_APISERVER_FEATURE_GATES-ShardedListAndWatch=true}"
  wait_for kube-apiserver "/readyz" apiserver_ready
  write_kubeconfig
}

start_kube_controller_manager() {
  start kube-controller-manager "${CLIENT_FLAGS[@]}" --root-ca-file "$CERTS/apiserver.crt" \
    --flex-volume-plugin-dir "$STATE/flexvolume" \
    --controllers '*,-serviceaccount-token-controller,-node-ipam-controller,-node-lifecycle-controller'
}

start_kube_scheduler() { start kube-scheduler "${CLIENT_FLAGS[@]}"; }

start_kwok() {
  k apply -f - <<<"$NODE_YAML" >/dev/null || fail "could not create node $NODE_NAME" kube-apiserver
  start kwok --kubeconfig "$KUBECONFIG_FILE" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --cidr 10.244.0.1/16 --node-ip 127.0.0.1
  wait_for kwok "Ready node $NODE_NAME" node_ready
}

# ------------------------------------------------------------- cluster ----

cmd_up() {
  cmd_build
  if healthy; then log "already up and healthy, nothing to do"; cmd_env; return 0; fi
  local t0=$SECONDS port name num var stray
  stop_all # leftovers of a crashed or half-started run
  stray=$(orphans | xargs)
  [[ -z $stray ]] || die "untracked cluster processes are running (pids $stray); run '$0 down' first"
  for port in "etcd:$ETCD_PORT:CLUSTER_ETCD_PORT" "etcd-peer:$ETCD_PEER_PORT:CLUSTER_ETCD_PEER_PORT" \
    "kube-apiserver:$APISERVER_PORT:CLUSTER_APISERVER_PORT"; do
    IFS=: read -r name num var <<<"$port"
    port_free "$num" && continue
    if command -v ss >/dev/null; then ss -ltnpH "sport = :$num" >&2 || true; fi # who holds it
    die "port $num (for $name) is already in use; free it or choose another with $var=PORT"
  done
  mkdir -p "$LOGS" "$PIDS" "$CERTS" "$STATE/etcd" "$STATE/flexvolume"
  chmod 700 "$STATE" "$STATE/etcd"
  make_secrets
  trap 'fail "interrupted"' INT TERM
  for name in "${COMPONENTS[@]}"; do "start_${name//-/_}"; done
  if has kube-controller-manager; then
    wait_for kube-controller-manager "default ServiceAccount" k get serviceaccount default -n default
  fi
  if has kube-scheduler; then alive kube-scheduler || fail "kube-scheduler exited" kube-scheduler; fi
  trap - INT TERM
  log "up in $((SECONDS - t0))s: ${COMPONENTS[*]}; apiserver https://127.0.0.1:$APISERVER_PORT, etcd $ETCD_URL$(has kwok && echo ", node $NODE_NAME"); state $STATE"
  cmd_env
}

# cmd_restart NAME: stop one component and start it again on the same
# state (etcd keeps its data, the apiserver its certificate), then wait
# until the whole cluster is healthy again. For tests of how clients
# survive it.
cmd_restart() {
  local name=${1:-} t0=$SECONDS
  [[ " ${COMPONENTS[*]} " == *" $name "* ]] || die "restart what? one of: ${COMPONENTS[*]}"
  all_alive || die "the cluster is not up; run '$0 up' first"
  make_secrets
  trap 'fail "interrupted"' INT TERM
  stop "$name"
  "start_${name//-/_}"
  wait_for "$name" "healthy cluster after the restart" healthy
  trap - INT TERM
  log "restarted $name in $((SECONDS - t0))s"
}

# cmd_stop NAME: stop one component and leave it stopped (the cluster is
# then down, or degraded) until `start NAME`: for tests of a cluster that
# does not answer for a while.
cmd_stop() {
  local name=${1:-}
  [[ " ${COMPONENTS[*]} " == *" $name "* ]] || die "stop what? one of: ${COMPONENTS[*]}"
  stop "$name"
}

# cmd_start NAME: start one component that `stop NAME` stopped, on the same
# state, and wait until the whole cluster is healthy again. A component that
# runs already is left alone.
cmd_start() {
  local name=${1:-} t0=$SECONDS
  [[ " ${COMPONENTS[*]} " == *" $name "* ]] || die "start what? one of: ${COMPONENTS[*]}"
  if alive "$name"; then log "$name runs already"; return 0; fi
  make_secrets
  trap 'fail "interrupted"' INT TERM
  "start_${name//-/_}"
  wait_for "$name" "healthy cluster after the start" healthy
  trap - INT TERM
  log "started $name in $((SECONDS - t0))s"
}

# cmd_compact: compact etcd's history at its current revision, through its
# HTTP/JSON gateway, and check that a read below it is refused; print the
# revision. Lists and watches from an older revision that reach etcd (not
# the API server's watch cache) fail from then on with 410 Gone.
cmd_compact() {
  local out rev
  alive etcd || die "etcd is not running; run '$0 up' first"
  out=$(curl -fsS -X POST "$ETCD_URL/v3/kv/range" -d '{"key":"AA==","limit":1}') || die "read etcd's revision: $out"
  rev=$(grep -o '"revision":"[0-9]*"' <<<"$out" | head -n 1 | tr -dc 0-9)
  [[ -n $rev ]] || die "no revision in etcd's answer: $out"
  out=$(curl -fsS -X POST "$ETCD_URL/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}") ||
    die "compact etcd at revision $rev: $out"
  out=$(curl -sS -X POST "$ETCD_URL/v3/kv/range" -d "{\"key\":\"AA==\",\"revision\":\"$((rev - 1))\"}")
  [[ $out == *compacted* ]] || die "etcd still serves revision $((rev - 1)) after compacting at $rev: $out"
  log "compacted etcd at revision $rev"
  echo "$rev"
}

# cmd_snapshot DIR: copy etcd's data folder to DIR (which must not exist)
# while etcd and the API server are stopped, then start them again and wait
# until the cluster is healthy. With restore, an etcd snapshot restore of
# the kind operators make after losing data: everything written since goes,
# and resourceVersions go back.
cmd_snapshot() {
  local dir=${1:-} t0=$SECONDS
  [[ -n $dir && ! -e $dir ]] || die "snapshot where? a folder that does not exist yet"
  all_alive || die "the cluster is not up; run '$0 up' first"
  make_secrets
  trap 'fail "interrupted"' INT TERM
  stop kube-apiserver
  stop etcd
  cp -a "$STATE/etcd" "$dir"
  start_etcd
  start_kube_apiserver
  wait_for kube-apiserver "healthy cluster after the snapshot" healthy
  trap - INT TERM
  log "snapshot of etcd's data in $dir in $((SECONDS - t0))s"
}

# cmd_restore DIR: replace etcd's data folder with the snapshot in DIR
# while etcd and the API server are stopped, then start them again and wait
# until the cluster is healthy. The other components keep running, as
# clients of the API server that see the world go back.
cmd_restore() {
  local dir=${1:-} t0=$SECONDS
  [[ -n $dir && -d $dir/member ]] || die "restore from where? a folder made by '$0 snapshot'"
  all_alive || die "the cluster is not up; run '$0 up' first"
  make_secrets
  trap 'fail "interrupted"' INT TERM
  stop kube-apiserver
  stop etcd
  rm -rf "$STATE/etcd"
  cp -a "$dir" "$STATE/etcd"
  chmod 700 "$STATE/etcd"
  start_etcd
  start_kube_apiserver
  wait_for kube-apiserver "healthy cluster after the restore" healthy
  trap - INT TERM
  log "restored etcd's data from $dir in $((SECONDS - t0))s"
}

cmd_down() {
  stop_all
  local -a stray
  mapfile -t stray < <(orphans)
  if ((${#stray[@]})); then # e.g. pid files were deleted by hand
    log "stopping untracked cluster processes: ${stray[*]}"
    kill -TERM "${stray[@]}" 2>/dev/null || true
    sleep 3
    mapfile -t stray < <(orphans)
    ((${#stray[@]} == 0)) || kill -KILL "${stray[@]}" 2>/dev/null || true
  fi
  if [[ ${1:-} == --keep-state ]]; then log "state kept in $STATE"; else rm -rf "$STATE"; fi
  [[ -z $(orphans) ]] || die "processes still running: $(orphans | xargs)"
  log "down"
}

cmd_status() {
  local name pid
  for name in "${COMPONENTS[@]}"; do
    pid=$(pid_of "$name")
    if alive "$name"; then echo "$name: running (pid $pid)"; else echo "$name: not running"; fi
  done
  if healthy; then echo "cluster is up (KUBECONFIG=$KUBECONFIG_FILE)"; else echo "cluster is not up"; return 1; fi
}

cmd_env() { echo "export KUBECONFIG=$KUBECONFIG_FILE"; }

# One build/up/down/restart at a time (e.g. parallel `make cluster`); the lock is released on exit.
if [[ ${1:-} =~ ^(build|up|down|restart|stop|start|snapshot|restore)$ ]]; then
  mkdir -p "$BIN" && exec 9>"$BIN/.cluster.lock" && flock 9
fi

case ${1:-} in
build) cmd_build ;;
up) cmd_up ;;
down) cmd_down "${2:-}" ;;
restart) cmd_restart "${2:-}" ;;
stop) cmd_stop "${2:-}" ;;
start) cmd_start "${2:-}" ;;
compact) cmd_compact ;;
snapshot) cmd_snapshot "${2:-}" ;;
restore) cmd_restore "${2:-}" ;;
status) cmd_status ;;
env) cmd_env ;;
*) echo "usage: $0 build|up|down [--keep-state]|restart NAME|stop NAME|start NAME|compact|snapshot DIR|restore DIR|status|env" >&2; exit 2 ;;
esac
