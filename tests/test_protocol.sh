#!/usr/bin/env bash
# tests/test_protocol.sh: ./compare --protocol FILE and the report of a fixed-budget grid, against
# numbers worked out by hand on a hand-made grid (--report-only):
#  - summary.md names the file and its FNV-1a 64 hash (computed here by Python from the bytes);
#  - with ./train --select-every every run counts (none left out), each with its best check's
#    validation accuracy beside it, and runs.csv's best_step;
#  - --claims-unit task: a pooled claim over tasks takes one unit per task (its seeds' mean);
#  - the MRR breaks ties as the expected value of a random break, counts the rankings with a tie, and
#    takes its t-interval over the claims' unit (tasks here);
#  - the claims again with the other unit (seed), a sensitivity table;
#  - --task-flags in a protocol: summary.md shows the task's own flags;
#  - --floor: the sensitivity table leaves out the runs below the floor and their partners;
#  - --paper: the table beside the paper and its "same order" count;
#  - what a protocol file and its command line may and may not hold;
#  - --dry-run: the plan and the commands, nothing written; every committed protocol reads;
#  - tools/pilot_budgets.sh: the pilot's inclusion rule and budgets, stage by stage;
# then a tiny real grid from a protocol: runs.csv's best_step is each train.log's selected step.
. "$(dirname "$0")/lib.sh"

# ---- a hand-made grid: tasks ta, tb, tc x schemes nope, alibi x seeds 1, 2; each run one
# in-distribution bucket (length 1, 10 of 10) and one beyond (length 2, 10 instances):
#   ood correct   ta: nope 8 6, alibi 2 2   tb: nope 5 5, alibi 5 1   tc: nope 3 1, alibi 0 1
#   best validation accuracy: 0.9 for every run but alibi seed 2 on ta (0.3)
fake="$tmp/fake"
fake_run() {   # task scheme seed ood_correct val
  local d="$fake/runs/$1/$2/seed$3"
  mkdir -p "$d"; : > "$d/done"
  printf 'step,loss\n1,2.0\n2,1.5\n' > "$d/log.csv"
  { echo "select: best validation accuracy $5 at step 40 of 100 (checked every 10 steps); the tests use it"
    echo "accuracy on $1 (exact match of the greedy answer, 10 test instances per bucket; trained on lengths 1-1):"; } > "$d/train.log"
  { echo "task,scheme,seed,length,depth,split,n,correct,accuracy,skipped,pool,distinct,top_share"
    echo "$1,$2,$3,1,,id,10,10,1.000000,0,10,10,0.3000"
    echo "$1,$2,$3,2,,ood,10,$4,$(awk "BEGIN{printf \"%.6f\", $4/10}"),0,100,10,0.3000"; } > "$d/eval.csv"
}
fake_run ta nope 1 8 0.9000; fake_run ta nope 2 6 0.9000; fake_run ta alibi 1 2 0.9000; fake_run ta alibi 2 2 0.3000
fake_run tb nope 1 5 0.9000; fake_run tb nope 2 5 0.9000; fake_run tb alibi 1 5 0.9000; fake_run tb alibi 2 1 0.9000
fake_run tc nope 1 3 0.9000; fake_run tc nope 2 1 0.9000; fake_run tc alibi 1 0 0.9000; fake_run tc alibi 2 1 0.9000
proto="$tmp/proto.txt"
cat > "$proto" <<'P'
# the hand-made grid's protocol
--task ta,tb,tc
--schemes nope,alibi
--seeds 1,2
--claims nope>alibi
--claims-unit task
--floor 0.5
--paper ta:nope=90,alibi=10
--paper tb:nope=10,alibi=20
--task-flags tb=--steps 150 --lr 1e-3
-- --steps 100 --select-every 10
P
./compare --protocol "$proto" --out "$fake" --train "$tmp/no-train" --report-only > "$tmp/log" 2>&1
check $? "--report-only with --protocol on the hand-made grid" || cat "$tmp/log"
s="$fake/summary.md"
has() { grep -qF -- "$2" "$1"; check $? "$(basename "$1") lacks: $2"; }
hash=$(/usr/bin/python3 -c '
import sys
h = 14695981039346656037
for b in open(sys.argv[1], "rb").read(): h = ((h ^ b) * 1099511628211) % 2**64
print("%016x" % h)' "$proto")
has "$s" "Protocol: $proto (FNV-1a 64 of its bytes: $hash)."
# every run counts, its validation accuracy beside it
has "$s" "| alibi | 2 of 2 (every run counts) | 100.0 [100.0, 100.0] | 20.0 ["
has "$s" "| 1: 20.0 (val 90.0), 2: 20.0 (val 30.0) |"
has "$fake/runs.csv" "ta,alibi,2,,,0.3000,1.000000,0.200000,,40"
# unit task: differences (points) ta 60 40 -> 50, tb 0 40 -> 20, tc 30 0 -> 15: mean 28.3; t(2) =
# 4.3027, sd 18.93: [-18.7, +75.4]; sign-flip over 3 units all positive: 2/8 = 0.25
has "$s" "| nope>alibi | all tasks | 3 | +28.3 | [-18.7, +75.4] | 0.25 | 0.25 | not distinguishable with 3 tasks |"
has "$s" "| nope - alibi | ta: +50.0, tb: +20.0, tc: +15.0 | 3 | +28.3 |"
# per task the unit stays the seed: ta d = 60, 40
has "$s" "|  | ta | 2 | +50.0 |"
# MRR: nope 1, 1 (ta), 0.75 (tb seed 1: a tie of two at ranks 1-2: (1 + 1/2) / 2), 1, 1, 0.75 (tc
# seed 2) -> 5.5 / 6; alibi 0.5, 0.5, 0.75, 0.5, 0.5, 0.75 -> 3.5 / 6
# t-interval over the 3 tasks' means: nope 1, 0.875, 0.875 (sd 0.0722, t(2) 4.3027): [0.737, 1.096];
# ties: tb seed 1 (5 and 5) and tc seed 2 (1 and 1), each all of its 2 ranked runs
has "$s" "| nope | 0.917 | [0.737, 1.096] | 6 |"
has "$s" "| alibi | 0.583 | [0.404, 0.763] | 6 |"
has "$s" "Ties: 2 of the 6 rankings hold a tie; in 2 every ranked run has the same accuracy, 2 of them with all 2 schemes ranked (a 2-way tie)."
has "$s" "with a 95% t-interval over the tasks (each task's mean 1/rank over its seeds)"
# the claim with the other unit, the seed (each seed's mean over the 3 tasks): seed 1 (60 + 0 + 30)/3
# = 30, seed 2 (40 + 40 + 0)/3 = 26.7; t(1) 12.706 x 1.667: [+7.2, +49.5] is above 0, but 2 seeds give
# p = 2/4 = 0.5 at best
has "$s" "## Claims with the other unit (sensitivity)"
has "$s" "| nope>alibi | all tasks | 2 | +28.3 | [+7.2, +49.5] | 0.5 | 0.5 | not distinguishable with 2 seeds |"
# --task-flags: tb's runs' own flags, in its section only
has "$s" "This task's runs also take \`--steps 150 --lr 1e-3\` (--task-flags)"
[ "$(grep -c "This task's runs also take" "$s")" = 1 ]; check $? "--task-flags shown for a task without them"
# the floor leaves out ta's alibi seed 2 and its partner: ta 60 (one seed), tb 20, tc 15 -> 31.7
has "$s" "## Claims without the runs below the floor (sensitivity)"
has "$s" "| nope>alibi | all tasks | 3 | +31.7 |"
has "$s" "|  | ta | 1 | +60.0 |"
# the paper: ta same order (nope above alibi both), tb not (the paper has alibi above); the
# measured means (ta nope 70, alibi 20; tb 50, 30; tc 20, 5) with their t-intervals over 2 seeds
# (t(1) = 12.706 x half the seeds' difference: ta nope 80, 60: 70 +- 127.1)
has "$s" "| ta | 70.0 [-57.1, 197.1] | 90.0 | 20.0 [20.0, 20.0] | 10.0 | 1 of 1 |"
grep -qE '^\| tb \| 50\.0 \[-?[0-9.]+, [0-9.]+\] \| 10\.0 \| 30\.0 \[-?[0-9.]+, [0-9.]+\] \| 20\.0 \| 0 of 1 \|$' "$s"
check $? "the paper's table, tb: $(grep '^| tb |' "$s" | tail -1)"
grep -qE '^\| tc \| 20\.0 \[-?[0-9.]+, [0-9.]+\] \| \| 5\.0 \[-?[0-9.]+, [0-9.]+\] \| \| \|$' "$s"
check $? "the paper's table, tc (no paper numbers): $(grep '^| tc |' "$s" | tail -1)"

# ---- what a protocol and its command line may hold
expect_fail "an experiment flag next to --protocol" "the experiment is the file's" \
  ./compare --protocol "$proto" --out "$tmp/x" --seeds 3
expect_fail "train flags next to --protocol" "drop the -- and what follows" ./compare --protocol "$proto" --out "$tmp/x" -- --steps 5
printf -- '--task ta\nschemes nope\n' > "$tmp/bad1"
expect_fail "a line that is not a flag" "line 2: 'schemes nope' is not a flag" ./compare --protocol "$tmp/bad1" --out "$tmp/x"
printf -- '--task ta\n--jobs 2\n' > "$tmp/bad2"
expect_fail "a run flag inside a protocol" "line 2: --jobs says where or how a grid runs" ./compare --protocol "$tmp/bad2" --out "$tmp/x"
printf -- '--task ta\n-- --steps 5\n--seeds 1\n' > "$tmp/bad3"
expect_fail "a flag after the train line" "line 3: nothing may follow the line of ./train flags" ./compare --protocol "$tmp/bad3" --out "$tmp/x"
expect_fail "a missing protocol" "cannot be read" ./compare --protocol "$tmp/none" --out "$tmp/x"
expect_fail "--paper of an unknown task" "'tz' is not one of the tasks" ./compare --out "$tmp/x" --task ta --paper 'tz:nope=1'
expect_fail "--claims-unit other" "give seed or task" ./compare --out "$tmp/x" --task ta --claims-unit run

# ---- a tiny real grid from a protocol: every run trains its budget and is tested at its best check
cat > "$tmp/real.txt" <<'P'
--task copy-repeat
--schemes nope,alibi
--seeds 1,2
--eval-per-length 5
-- --layers 1 --heads 2 --dim 16 --batch 8 --steps 30 --select-every 10 --lr 1e-2 --alphabet 26 --train-max 4 --test-max 6 --log-every 1000
P
./compare --protocol "$tmp/real.txt" --out "$tmp/real" --jobs 2 --quiet > "$tmp/rlog" 2>&1
check $? "the real grid" || tail "$tmp/rlog"
ok=1
for d in "$tmp"/real/runs/copy-repeat/*/seed*; do
  step=$(grep '^select: best' "$d/train.log" | sed 's/.* at step \([0-9]*\) of 30 .*/\1/')
  sc=$(basename "$(dirname "$d")"); sd=${d##*seed}
  [ -n "$step" ] && grep -q "^copy-repeat,$sc,$sd,.*,$step\$" "$tmp/real/runs.csv" || ok=0
done
check $((1 - ok)) "runs.csv's best_step is each run's selected step"

# ---- --dry-run: the plan and each run's commands, nothing trained or written
lines=$(wc -l < "$tmp/real/compare.log")
./compare --protocol "$tmp/real.txt" --out "$tmp/real" --jobs 2 --dry-run > "$tmp/dry" 2>&1
check $? "--dry-run on the finished real grid" || tail "$tmp/dry"
grep -q '^compare: 4 runs (1 tasks x 2 schemes x 2 seeds), 4 already done, 0 to train' "$tmp/dry"
check $? "--dry-run's plan: $(head -1 "$tmp/dry")"
[ "$(grep -c "^$tmp/real/runs/copy-repeat/.*/seed[12] (done)\$" "$tmp/dry")" = 4 ] && grep -q '^  ./train --task copy-repeat .* --pe alibi --seed 2 ' "$tmp/dry"
check $? "--dry-run lists each run as done, with its training command"
[ "$(wc -l < "$tmp/real/compare.log")" = "$lines" ]
check $? "--dry-run writes nothing to compare.log"
# a stopped run (its `started` holds this grid's commands) is labelled so; a missing trainer is named
st="$tmp/stop/runs/copy-repeat/nope/seed1"; mkdir -p "$st"; echo other > "$st/started"
./compare --protocol "$tmp/real.txt" --out "$tmp/stop" --dry-run > "$tmp/se" 2>&1
sed -n '/^now:$/,/^give another/p' "$tmp/se" | sed '1d;$d' > "$st/started"
./compare --protocol "$tmp/real.txt" --out "$tmp/stop" --dry-run > "$tmp/dry" 2>&1
grep -qFx "$st (stopped: continues from its checkpoint)" "$tmp/dry" && grep -qFx "$tmp/stop/runs/copy-repeat/alibi/seed1 (to train)" "$tmp/dry"
check $? "--dry-run labels the stopped run: $(grep seed1 "$tmp/dry" | grep -v '^ ')"
./compare --protocol "$tmp/real.txt" --out "$tmp/nobin" --dry-run --train "$tmp/none" > "$tmp/dry" 2>&1
grep -qF "the trainer '$tmp/none' cannot be run" "$tmp/dry" && [ ! -e "$tmp/nobin" ]
check $? "--dry-run names a missing trainer and creates nothing"
expect_fail "--dry-run with --report-only" "give one" ./compare --protocol "$tmp/real.txt" --out "$tmp/real" --dry-run --report-only
# ---- tools/pilot_budgets.sh: the pilot's inclusion rule, on two hand-made stages (A, B)
pb="$tmp/pilot"
pilot_run() {   # stage task scheme fitted fit_step seconds
  local d="$pb/$1/runs/$2/$3/seed9001"
  mkdir -p "$d"; : > "$d/done"
  printf 'step,loss,val_loss,lr,grad_norm,tokens_per_s,elapsed_s\n1,2,,1,1,1,0.5\n%s,1,,1,1,1,%s\n' "$5" "$6" > "$d/log.csv"
  [ -f "$pb/$1/runs.csv" ] || echo "task,scheme,seed,fitted,fit_step,val_accuracy,id_accuracy,ood_accuracy,degenerate_lengths,best_step" > "$pb/$1/runs.csv"
  echo "$2,$3,9001,$4,$5,0.9,0.9,0.1,," >> "$pb/$1/runs.csv"
}
# lego: 2 of 5 fit in A (nope at 2900); in B, t5, alibi and rotary fit (largest 2000) but nope does
# not: admitted by B alone with B's steps (2500), not by a union of the stages (3 + nope, at 2900).
# parity: 2 of 5 in A and absent from B: not in stage B.
# copy: 4 of 5 fit in A by step 700, but ape did not in its 3000 steps: sized on 3000 (3750: 4000);
# sort: 3 of 5, largest 2100 (the others stopped at 1200)
# (2625: 3000); sum: 1 of 5 in A, 3 of 5 in B, largest 9000 (11250: 11500); pcfg: 0 in A, 2 in B.
# Per 1000 steps, the stage's minutes over its steps: copy 5 / 5800, sort 10 / 6900, sum in B 50 / 29000
for sc in nope t5 alibi rotary ape; do
  f=1; [ $sc = ape ] && f=0; pilot_run A copy $sc $f $([ $f = 1 ] && echo 700 || echo 3000) 60
  f=0; case $sc in nope|t5|alibi) f=1;; esac; pilot_run A sort $sc $f $([ $sc = t5 ] && echo 2100 || echo 1200) 120
  f=0; [ $sc = nope ] && f=1; pilot_run A sum $sc $f 3000 180
  pilot_run A pcfg $sc 0 3000 240
  f=0; case $sc in nope|t5|rotary) f=1;; esac; pilot_run B sum $sc $f $([ $sc = rotary ] && echo 9000 || echo 5000) 600
  f=0; case $sc in nope|t5) f=1;; esac; pilot_run B pcfg $sc $f 8000 900
  f=0; case $sc in nope|ape) f=1;; esac; pilot_run A lego $sc $f $([ $sc = nope ] && echo 2900 || echo 1000) 60
  f=0; case $sc in t5|alibi|rotary) f=1;; esac; pilot_run B lego $sc $f $([ $sc = rotary ] && echo 2000 || echo 1000) 60
  f=0; case $sc in nope|t5) f=1;; esac; pilot_run A parity $sc $f 1000 60
done
# a run stopped and continued: its clock restarts, and its cost is the sittings' sum (30 + 90 s)
printf 'step,loss,val_loss,lr,grad_norm,tokens_per_s,elapsed_s\n1,2,,1,1,1,10\n500,1,,1,1,1,30\n600,1,,1,1,1,20\n1000,1,,1,1,1,90\n' \
  > "$pb/A/runs/parity/nope/seed9001/log.csv"
tools/pilot_budgets.sh "$pb/A" > "$tmp/pa" 2>&1; check $? "pilot_budgets on stage A" || cat "$tmp/pa"
for want in "| copy | A | 4 of 5 | 3000 | 4000 | 5.0 | 0.86 |" "| parity | A | 2 of 5 | - | stage B | 6.0 | 1.20 |" "| sort | A | 3 of 5 | 2100 | 3000 | 10.0 | 1.45 |" \
            "| sum | A | 1 of 5 | - | stage B | 15.0 | 1.00 |" "--task copy,sort" "--task-flags sort=--steps 3000" "stage B: --task sum,pcfg,lego,parity"; do
  grep -qFx -- "$want" "$tmp/pa"; check $? "pilot_budgets, stage A, lacks: $want"
done
tools/pilot_budgets.sh "$pb/A" "$pb/B" > "$tmp/pab" 2>&1; check $? "pilot_budgets on stages A and B" || cat "$tmp/pab"
for want in "| sum | B | 3 of 5 | 9000 | 11500 | 65.0 | 1.72 |" "| pcfg | B | 2 of 5 | - | out of reach | 95.0 | 1.88 |" \
            "| lego | B | 3 of 5 | 2000 | 2500 | 10.0 | 0.83 |" "| parity | A | 2 of 5 | - | not in stage B | 6.0 | 1.20 |" \
            "--task copy,sort,sum,lego" "--task-flags sum=--steps 11500" "out of reach: pcfg" "stage B: --task parity"; do
  grep -qFx -- "$want" "$tmp/pab"; check $? "pilot_budgets, stages A and B, lacks: $want"
done
# tools/nope_protocol.sh: the confirmatory protocol from the committed template and the two stages.
# parity did not run in stage B: refused. With parity in B (no scheme fits: out of reach), the
# admitted four get their budgets; cost: (4000 x 0.86 + 3000 x 1.45 + 11500 x 1.72 + 2500 x 0.83)
# / 1000 x 50 runs / 60 / 2 = 12.4 hours of 2 cores, within the template's cap of 20
expect_fail "nope_protocol with a configuration not run in stage B" "parity did not run in stage B" \
  tools/nope_protocol.sh protocols/nope-learned.in "$pb/A" "$pb/B" "$tmp/learned.txt"
[ ! -e "$tmp/learned.txt" ]; check $? "a refused nope_protocol writes nothing"
cp -r "$pb/B" "$pb/B2"
for sc in nope t5 alibi rotary ape; do pilot_run B2 parity $sc 0 12000 600; done
tools/nope_protocol.sh protocols/nope-learned.in "$pb/A" "$pb/B2" "$tmp/learned.txt" > "$tmp/np" 2>&1
check $? "nope_protocol on stages A and B" || cat "$tmp/np"
grep -qFx "nope_protocol: $tmp/learned.txt: 4 configurations, about 12.4 hours of 2 cores" "$tmp/np"; check $? "nope_protocol's line: $(cat "$tmp/np")"
for want in "--task copy,sort,sum,lego" "--task-flags sum=--steps 11500" "--task-flags lego=--steps 2500" \
            "# | parity | B | 0 of 5 | - | out of reach | 56.0 | 0.83 |" "# Estimated cost: 12.4 hours of 2 cores (50 runs per configuration), within the cap of 20." \
            "# Fewer than 5 configurations: the claims cover only these 4." \
            "--paper lego:nope=64.6,t5=70.5,alibi=79.7,rotary=74.8,ape=61.0" "--floor 0.9"; do
  grep -qFx -- "$want" "$tmp/learned.txt"; check $? "nope_protocol's protocol lacks: $want"
done
! grep -q '^--paper \(parity\|pcfg\|scan\):\|@BUDGETS' "$tmp/learned.txt"; check $? "nope_protocol keeps --paper of a configuration not admitted"
[ "$(grep -v '^# |\|^# Estimated\|^# Fewer\|^--task' "$tmp/learned.txt")" = "$(grep -v '^@BUDGETS 20@$\|^--paper \(copy-2x\|copy-repeat\|reverse\|addition\|polynomial\|sort-multi\|parity\|scan\|pcfg\)' protocols/nope-learned.in | grep -v '^--paper copy-repeat')" ]
check $? "nope_protocol changes nothing but the budgets and the --paper lines"
./compare --protocol "$tmp/learned.txt" --out "$tmp/learned-out" --dry-run > "$tmp/dry" 2>&1 && grep -q '^compare: 200 runs (4 tasks x 5 schemes x 10 seeds)' "$tmp/dry" \
  && grep -q -- '--task sum .* --steps 11500' "$tmp/dry"
check $? "the made protocol reads: $(head -2 "$tmp/dry")"
tools/nope_protocol.sh protocols/nope-learned.in "$pb/A" "$pb/B2" "$tmp/learned.txt" > "$tmp/np" 2>&1 && grep -q "is made already" "$tmp/np"
check $? "nope_protocol again on the same stages: $(cat "$tmp/np")"
echo "# edited" >> "$tmp/learned.txt"
expect_fail "nope_protocol onto another protocol" "exists and differs" \
  tools/nope_protocol.sh protocols/nope-learned.in "$pb/A" "$pb/B2" "$tmp/learned.txt"
# tools/pilot_stage_b.sh: stage B's file is the pilot's, with what stage A did not admit and 12000 steps
tools/pilot_stage_b.sh protocols/nope-pilot.txt "$pb/A" "$tmp/pilot-b.txt" > "$tmp/sb" 2>&1
check $? "pilot_stage_b on stage A" || cat "$tmp/sb"
grep -qFx -- "--task sum,pcfg,lego,parity" "$tmp/pilot-b.txt" && grep -q -- '^-- .* --max-steps 12000 ' "$tmp/pilot-b.txt" \
  && head -1 "$tmp/pilot-b.txt" | grep -qF "$tmp/pilot-b.txt: stage B of the pilot protocols/nope-pilot.txt"
check $? "pilot_stage_b's protocol: $(head -1 "$tmp/pilot-b.txt")"
[ "$(diff protocols/nope-pilot.txt "$tmp/pilot-b.txt" | grep -c '^[<>]')" = 10 ] && grep -qFx "# ./compare --protocol $tmp/pilot-b.txt --out DIR --jobs 2" "$tmp/pilot-b.txt" \
  && grep -q '^# Stage A (protocols/nope-pilot.txt): every configuration' "$tmp/pilot-b.txt"
check $? "pilot_stage_b changes five lines: its name, its command, stage A's name, --task and --max-steps"
./compare --protocol "$tmp/pilot-b.txt" --out "$tmp/pb-out" --dry-run > "$tmp/dry" 2>&1 && grep -q '^compare: 20 runs (4 tasks x 5 schemes x 1 seeds)' "$tmp/dry"
check $? "stage B's protocol reads: $(head -1 "$tmp/dry")"
tools/pilot_stage_b.sh protocols/nope-pilot.txt "$pb/A" "$tmp/pilot-b.txt" > "$tmp/sb" 2>&1 && grep -q "is made already" "$tmp/sb"
check $? "pilot_stage_b again: $(cat "$tmp/sb")"
expect_fail "pilot_stage_b onto another file" "exists and differs" tools/pilot_stage_b.sh protocols/nope-pilot.txt "$pb/B2" "$tmp/pilot-b.txt"
# the cap: a template capped at 5 hours takes lego (0.86 h), copy (1.43) and sort (1.81) and leaves
# out sum (8.24)
sed 's/^@BUDGETS 20@$/@BUDGETS 5@/' protocols/nope-learned.in > "$tmp/cap5.in"
tools/nope_protocol.sh "$tmp/cap5.in" "$pb/A" "$pb/B2" "$tmp/cap5.txt" > "$tmp/np" 2>&1; check $? "nope_protocol under a cap" || cat "$tmp/np"
for want in "--task copy,sort,lego" "# Over the cap, left out: sum (8.2 h)." "# Estimated cost: 4.1 hours of 2 cores (50 runs per configuration), within the cap of 5."; do
  grep -qFx -- "$want" "$tmp/cap5.txt"; check $? "nope_protocol under a cap lacks: $want"
done
! grep -q -- '--task-flags sum=\|^--paper sum:' "$tmp/cap5.txt"; check $? "a configuration over the cap keeps its lines"
# a template tracked by git and changed since its commit is refused
if have git "a template changed since its commit (nope_protocol)" "apt-get install git"; then
  mkdir "$tmp/g" && cp protocols/nope-learned.in "$tmp/g/t.in" && git -C "$tmp/g" init -q \
    && git -C "$tmp/g" -c user.name=t -c user.email=t@t add t.in && git -C "$tmp/g" -c user.name=t -c user.email=t@t commit -qm t \
    || abort "git init of a scratch repository failed"
  tools/nope_protocol.sh "$tmp/g/t.in" "$pb/A" "$pb/B2" "$tmp/g1.txt" > /dev/null 2>&1; check $? "nope_protocol on a committed template"
  echo "# changed after its commit" >> "$tmp/g/t.in"
  expect_fail "nope_protocol on a template changed since its commit" "differs from its committed version" \
    tools/nope_protocol.sh "$tmp/g/t.in" "$pb/A" "$pb/B2" "$tmp/g2.txt"
fi
# a configuration admitted by A that also ran in B; a stage whose protocol names a configuration with no run
cp -r "$pb/B2" "$pb/B3"; for sc in nope t5 alibi rotary ape; do pilot_run B3 copy $sc 1 700 60; done
expect_fail "pilot_budgets with a configuration in both stages" "copy was admitted by stage A but ran in stage B" tools/pilot_budgets.sh "$pb/A" "$pb/B3"
printf -- '--task copy,sort,sum,pcfg,lego,parity,scan\n' > "$tmp/pa-proto.txt"
echo "Protocol: $tmp/pa-proto.txt (FNV-1a 64 of its bytes: 0123456789abcdef). Its tasks are this report's." > "$pb/A/summary.md"
expect_fail "pilot_budgets on a stage missing a configuration of its protocol" "scan of $tmp/pa-proto.txt has no finished run" tools/pilot_budgets.sh "$pb/A"
sed -i 's/,scan$//' "$tmp/pa-proto.txt"
tools/pilot_budgets.sh "$pb/A" > /dev/null 2>&1; check $? "pilot_budgets on a stage with every configuration of its protocol"
# stage A admits everything: no stage B, and the protocol without it; without B when A left some: refused
for sc in nope t5 alibi rotary ape; do pilot_run ALL copy $sc 1 700 60; done
tools/pilot_stage_b.sh protocols/nope-pilot.txt "$pb/ALL" "$tmp/none-b.txt" > "$tmp/sb" 2>&1 && grep -q "there is no stage B" "$tmp/sb" && [ ! -e "$tmp/none-b.txt" ]
check $? "pilot_stage_b when stage A admitted everything: $(cat "$tmp/sb")"
tools/nope_protocol.sh protocols/nope-learned.in "$pb/ALL" "$pb/none" "$tmp/all.txt" > "$tmp/np" 2>&1 && grep -qFx -- "--task-flags copy=--steps 1000" "$tmp/all.txt"
check $? "nope_protocol with no stage B: $(cat "$tmp/np")"
expect_fail "nope_protocol without stage B when A left configurations for it" "stage B ($pb/none) has not run" \
  tools/nope_protocol.sh protocols/nope-learned.in "$pb/A" "$pb/none" "$tmp/nob.txt"
# refused: a stage with a run unfinished, a configuration short of a run, a grid without a fit criterion
rm "$pb/A/runs/copy/ape/seed9001/done"
expect_fail "pilot_budgets on an unfinished stage" "copy/ape/seed9001 has not finished" tools/pilot_budgets.sh "$pb/A"
grep -v '^copy,ape,' "$pb/A/runs.csv" > "$tmp/rc" && mv "$tmp/rc" "$pb/A/runs.csv"; rm -r "$pb/A/runs/copy/ape"
expect_fail "pilot_budgets on a configuration short of a run" "copy has 4 finished runs, not 5 schemes x 1 seeds" tools/pilot_budgets.sh "$pb/A"
sed -i 's/^sort,nope,9001,1,/sort,nope,9001,,/' "$pb/A/runs.csv"
expect_fail "pilot_budgets on runs without a fit result" "sort nope seed 9001 has no fit result" tools/pilot_budgets.sh "$pb/A"
expect_fail "pilot_budgets without runs.csv" "runs.csv is missing" tools/pilot_budgets.sh "$tmp/none"
# every committed protocol still reads, and its plan names its runs (nothing is created)
# (a text protocol reads its --data file: the KJV is made here when bible-kjv is installed)
if grep -q '^--data data/kjv.txt' protocols/*.txt && [ ! -f data/kjv.txt ] && command -v bible > /dev/null; then
  make -s kjv > /dev/null || abort "make kjv failed"
fi
for p in protocols/*.txt; do
  data=$(sed -n 's/^--data //p' "$p")
  if [ -n "$data" ] && [ ! -e "$data" ]; then
    skip "$p reads $data" "apt-get install bible-kjv, then make kjv"; continue
  fi
  ./compare --protocol "$p" --out "$tmp/dry-out" --jobs 2 --dry-run > "$tmp/dry" 2>&1
  check $? "$p does not read: $(grep error "$tmp/dry" | head -1)"
  grep -qE '^compare: [0-9]+ runs \([0-9]+ tasks x [0-9]+ schemes x [0-9]+ seeds' "$tmp/dry"
  check $? "$p: no plan line"
  [ ! -e "$tmp/dry-out" ]
  check $? "$p: --dry-run created its --out"
done
finish
