#!/usr/bin/env bash
# Runs the render benchmarks (bench/, its own module) and prints each one's
# speed as a ratio against Helm's engine measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/../bench"
out=$(go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" -count "${COUNT:-3}" ./render/ | tee /dev/stderr)
echo
echo "Median ns/op over ${COUNT:-3} runs, and Helm's time divided by each (higher is faster):"
awk '
  /^BenchmarkRender\// {
    name=$1; sub(/^BenchmarkRender\//, "", name); sub(/-[0-9]+$/, "", name)
    v[name]=v[name] " " $3
  }
  function median(s,   a, n, i, j, t) {
    n=split(s, a, " ")
    for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]+0<a[i]+0) {t=a[i];a[i]=a[j];a[j]=t}
    return a[int((n+1)/2)]
  }
  END {
    base=median(v["helm"])
    for (k in v) printf "  %-26s %10.0f ns/op   helm/this = %5.2fx\n", k, median(v[k]), base/median(v[k])
  }' <<<"$out" | sort -t= -k2 -n

echo
echo "Chart sets: median ns/op, and Helm 4's engine.Render on the same chart and values divided by each (higher is faster):"
awk '
  /^BenchmarkChart\// {
    name=$1; sub(/^BenchmarkChart\//, "", name); sub(/-[0-9]+$/, "", name)
    v[name]=v[name] " " $3
  }
  function median(s,   a, n, i, j, t) {
    n=split(s, a, " ")
    for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]+0<a[i]+0) {t=a[i];a[i]=a[j];a[j]=t}
    return a[int((n+1)/2)]
  }
  END {
    for (k in v) {
      split(k, p, "/")
      base=median(v[p[1] "/helm-engine-render"])
      printf "  %-26s %10.0f ns/op   engine.Render/this = %5.2fx\n", k, median(v[k]), base/median(v[k])
    }
  }' <<<"$out" | sort
