#!/usr/bin/env bash
# tools/pilot_budgets.sh A [B] [MIN]: the inclusion rule of a fit-first pilot (protocols/nope-pilot.txt),
# applied to its ./compare folders: A is stage A's, B (optional) stage B's.
#
# Per configuration (task): a scheme fits when each of its runs reached the fit target (runs.csv:
# fitted = 1). A configuration is admitted in a stage when at least MIN (default 3) of its schemes
# fit there; stage A is read first. Its budget is 1.25 x the largest step it is sized on, rounded up
# to a multiple of 500, at least 1000 steps. It is sized on every scheme: a scheme that fitted at
# its fit step, one that did not at the steps it trained (the stage's cap), so that no scheme gets
# fewer steps than the pilot gave it. Not admitted by A: stage B's to try; not admitted by B
# either: out of reach. A configuration admitted by A must not be in B.
#
# A stage must be finished: every run done, every configuration with a run of each scheme and seed,
# a fit result for every run (a fit-first grid), and every configuration of its protocol present
# (the protocol named in its summary.md, when it can be read).
# Cost: the training time of the configuration's runs (log.csv's elapsed_s, summed over the
# sittings of a run that was stopped and continued), in minutes of one run's threads. Per 1000
# steps: the last stage's minutes over the steps its runs trained (log.csv's last step).
# Prints a markdown table, then the lines a confirmatory protocol takes (--task, --task-flags) and,
# without B, stage B's --task line.
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 3 ] || { echo "usage: tools/pilot_budgets.sh STAGE_A_DIR [STAGE_B_DIR] [MIN]" >&2; exit 2; }
a=${1%/}; b=${2:-}; b=${b%/}; min=${3:-3}
[[ "$min" =~ ^[1-9][0-9]*$ ]] || { echo "pilot_budgets: MIN must be a positive count, not '$min'" >&2; exit 1; }
for d in "$a" ${b:+"$b"}; do
    [ -f "$d/runs.csv" ] || { echo "pilot_budgets: $d/runs.csv is missing (run ./compare on $d to the end, or with --report-only)" >&2; exit 1; }
done

# one line per run: stage,task,scheme,fitted,fit_step,minutes,steps (log.csv's last step)
runs() {   # runs STAGE DIR
    local stage=$1 dir=$2
    awk -F, -v stage="$stage" -v dir="$dir" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i
                  if (!("task" in col) || !("fitted" in col) || !("fit_step" in col)) {
                      print "pilot_budgets: " dir "/runs.csv has no task, fitted and fit_step columns (a fit-first grid: --fit-target)" > "/dev/stderr"; exit 1 }
                  next }
        $col["fitted"] == "" { print "pilot_budgets: " dir "/runs.csv: " $col["task"] " " $col["scheme"] " seed " $col["seed"] " has no fit result (a fit-first grid, ./compare --fit-target, has one for every run)" > "/dev/stderr"; bad = 1; exit 1 }
        $col["fitted"] == 1 && $col["fit_step"] == "" { print "pilot_budgets: " dir "/runs.csv: " $col["task"] " " $col["scheme"] " seed " $col["seed"] " fitted at no step" > "/dev/stderr"; bad = 1; exit 1 }
        { lf = dir "/runs/" $col["task"] "/" $col["scheme"] "/seed" $col["seed"] "/log.csv"; base = 0; prev = 0; steps = 0; e = 0; line = ""
          while ((getline line < lf) > 0) {
              n = split(line, f, ",")
              if (f[1] == "step") { for (i = 1; i <= n; i++) if (f[i] == "elapsed_s") e = i; continue }
              steps = f[1]
              if (e) { if (f[e] + 0 < prev) base += prev; prev = f[e] + 0 } }   # a new sitting restarts the clock
          close(lf)
          printf "%s,%s,%s,%d,%d,%.3f,%d\n", stage, $col["task"], $col["scheme"], $col["fitted"], $col["fit_step"], (base + prev) / 60, steps
          rows[$col["task"]]++; if (!(($col["scheme"]) in sc)) { sc[$col["scheme"]]; ns++ }; if (!(($col["seed"]) in sd)) { sd[$col["seed"]]; nd++ } }
        END { if (bad) exit 1
              for (t in rows) if (rows[t] != ns * nd) {
                  print "pilot_budgets: " dir ": " t " has " rows[t] " finished runs, not " ns " schemes x " nd " seeds: finish the stage first (the same ./compare command continues it)" > "/dev/stderr"; exit 1 } }' "$dir/runs.csv" || return 1
    local open
    open=$(find "$dir/runs" -mindepth 3 -maxdepth 3 -type d -name 'seed*' '!' -exec test -e '{}/done' ';' -print 2> /dev/null | head -1)
    [ -z "$open" ] || { echo "pilot_budgets: $open has not finished: finish the stage first (the same ./compare command continues it)" >&2; return 1; }
    # every configuration of the stage's protocol has its runs (one never started is in no runs.csv)
    local proto task
    proto=$(sed -n '1s/^Protocol: \(.*\) (FNV-1a 64 of its bytes: [0-9a-f]*)\..*/\1/p' "$dir/summary.md" 2> /dev/null)
    if [ -n "$proto" ] && [ -r "$proto" ]; then
        for task in $(sed -n 's/^--task //p' "$proto" | tr ',' ' '); do
            cut -d, -f1 "$dir/runs.csv" | grep -qx -- "$task" \
              || { echo "pilot_budgets: $dir: $task of $proto has no finished run: finish the stage first (the same ./compare command continues it)" >&2; return 1; }
        done
    fi
}

all=$(mktemp); trap 'rm -f "$all"' EXIT
runs A "$a" > "$all" || exit 1
if [ -n "$b" ]; then runs B "$b" >> "$all" || exit 1; fi
awk -F, -v min="$min" -v has_b="${b:+1}" -v bdir="$b" '
    { key = $1 SUBSEP $2
      if (!(($2) in seen)) { seen[$2] = 1; order[++nt] = $2 }
      if (!((key, $3) in sch)) { sch[key, $3] = 1; nsch[key]++; fitall[key, $3] = 1 }
      if (!$4) fitall[key, $3] = 0
      size = $4 ? $5 : $7                       # sized on: the fit step, or the steps a run that did not fit trained
      if (size > top[key, $3]) top[key, $3] = size
      cost[$2] += $6; smin[key] += $6; ssteps[key] += $7; staged[key] = 1; names[key] = names[key] " " $3 }
    END {
      print "| configuration | stage | schemes fitted | sized on (steps) | budget (steps) | cost (run-minutes) | run-minutes per 1000 steps |"
      print "|---|---|---|---|---|---|---|"
      for (t = 1; t <= nt; t++) {
          task = order[t]; verdict = ""; bud = ""; shown = ""; last = ""
          for (s = 1; s <= 2 && verdict == ""; s++) {
              st = s == 1 ? "A" : "B"; key = st SUBSEP task
              if (!(key in staged)) continue
              fit = 0; big = 0; last = st
              split(substr(names[key], 2), nm, " ")
              for (i in nm) if (!done_[key, nm[i]]++) { fit += fitall[key, nm[i]]; if (top[key, nm[i]] > big) big = top[key, nm[i]] }
              shown = fit " of " nsch[key]
              if (fit >= min) {
                  bud = int((1.25 * big + 499) / 500) * 500; if (bud < 1000) bud = 1000
                  verdict = "admitted"; admitted = admitted (admitted ? "," : "") task
                  flags = flags "--task-flags " task "=--steps " bud "\n"
                  if (st == "A" && (("B" SUBSEP task) in staged)) {
                      print "pilot_budgets: " task " was admitted by stage A but ran in stage B (" bdir "): stage B holds only what A did not admit" > "/dev/stderr"; exit 1 }
              }
          }
          if (verdict == "") { if (last == "A") retry = retry (retry ? "," : "") task
                               else out = out (out ? "," : "") task }
          key = last SUBSEP task
          printf "| %s | %s | %s | %s | %s | %.1f | %.2f |\n", task, last, shown, verdict ? big : "-",
                 verdict ? bud : last == "B" ? "out of reach" : has_b ? "not in stage B" : "stage B", cost[task],
                 ssteps[key] ? 1000 * smin[key] / ssteps[key] : 0
      }
      print ""
      print "admitted (" (admitted ? admitted : "none") ")"
      if (admitted) { print "--task " admitted; printf "%s", flags }
      if (retry) { print "stage B: --task " retry }
      if (out) print "out of reach: " out
    }' "$all"
