#!/usr/bin/env bash
# Runs the render benchmarks (bench/, its own module) and prints each one's
# speed as a ratio against Helm's engine measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/../bench"
out=$(go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" -count "${COUNT:-3}" ./render/ | tee /dev/stderr)
# ratios PREFIX BASE TITLE: the median ns/op of each BenchmarkPREFIX/NAME,
# and the median of its group's BASE (the first path element's, for
# names with a group) divided by it.
ratios() {
  echo
  echo "$3"
  awk -v prefix="^Benchmark$1/" -v basename="$2" '
    $1 ~ prefix {
      name=$1; sub(prefix, "", name); sub(/-[0-9]+$/, "", name)
      v[name]=v[name] " " $3
    }
    function median(s,   a, n, i, j, t) {
      n=split(s, a, " ")
      for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]+0<a[i]+0) {t=a[i];a[i]=a[j];a[j]=t}
      return a[int((n+1)/2)]
    }
    END {
      for (k in v) {
        group=""
        if (index(k, "/")) { split(k, p, "/"); group=p[1] "/" }
        printf "  %-26s %10.0f ns/op   %s/this = %5.2fx\n", k, median(v[k]), basename, median(v[group basename])/median(v[k])
      }
    }' <<<"$out" | sort -t= -k2 -n
}

ratios Render helm "Median ns/op over ${COUNT:-3} runs, and Helm's time divided by each (higher is faster):"
ratios Chart helm-engine-render "Chart sets: Helm 4's engine.Render on the same chart and values, divided by each (higher is faster):"
