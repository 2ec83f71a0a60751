#!/usr/bin/env bash
# tests/test_distance.sh: the attention distance's baseline of the same initial weights.
#  - ./train --data-seed: the same --seed with another --data-seed starts from bit-identical weights
#    (a step at --lr 0, exported) and logs other losses; --data-seed equal to --seed is the default
#    run bit for bit; bad values refused;
#  - ./compare --report-only on a hand-made grid (2 tasks x nope, t5, alibi, rope and NoPE's twins x
#    7 seeds) against numbers worked out by hand (with /usr/bin/python3 from the formulas, once; the
#    values are below): each scheme's distance to NoPE in both definitions (the mean over layers of
#    the rows at the training lengths), the paired differences from the twin's distance with their
#    t-interval and exact sign-flip p, the claim "nearest to T5" with Holm's p and its verdicts
#    (supported, contradicted), pooled over the tasks with the seed as unit (a twin not fitted leaves
#    its seed's task out), and distance.csv files of the old four columns read;
#  - ./compare --attention-distance end to end on a tiny grid with --select-every: the twin runs
#    (their folder, --seed, --data-seed SEED + 1000003 in their done), both columns in every
#    distance.csv, the distances taken on model.ckpt.best, everything kept on a second command, and
#    --data-seed after -- refused.
. "$(dirname "$0")/lib.sh"
losses() { cut -d, -f1-3 "$1"; }

# ---- ./train --data-seed
m="--task copy --layers 1 --heads 2 --dim 16 --batch 4 --threads 1 --log-every 1000 --eval-per-length 0"
for x in "a --seed 3" "b --seed 3 --data-seed 9" "c --seed 4"; do
  set -- $x; n=$1; shift
  ./train $m --steps 1 --lr 0 "$@" --save "$tmp/$n.ckpt" > /dev/null && ./train --load "$tmp/$n.ckpt" --export "$tmp/$n.st" > /dev/null 2>&1
  check $? "a step at --lr 0 and its export ($x)"
done
cmp -s "$tmp/a.st" "$tmp/b.st"; check $? "--seed 3 --data-seed 9 must start from --seed 3's weights, bit for bit"
! cmp -s "$tmp/a.st" "$tmp/c.st"; check $? "--seed 4 must start from other weights than --seed 3"
./train $m --steps 6 --seed 3 --dropout 0.1 --log "$tmp/a.csv" > /dev/null
./train $m --steps 6 --seed 3 --dropout 0.1 --data-seed 9 --log "$tmp/b.csv" > /dev/null; check $? "the run with --data-seed 9"
./train $m --steps 6 --seed 3 --dropout 0.1 --data-seed 3 --log "$tmp/same.csv" > /dev/null
! diff -q <(losses "$tmp/a.csv") <(losses "$tmp/b.csv") > /dev/null; check $? "--data-seed 9 must train on other instances (other losses)"
diff <(losses "$tmp/a.csv") <(losses "$tmp/same.csv") > /dev/null; check $? "--data-seed 3 with --seed 3 must be the default run bit for bit"
expect_fail "a negative --data-seed" "--data-seed -1 is out of range" ./train $m --data-seed -1
expect_fail "a --data-seed that is not a number" "--data-seed: 'x' is not an integer" ./train $m --data-seed x

# ---- the report alone on a hand-made grid. A pair's distance is the mean of its rows at the
# training lengths (copy: layers 0 and 1 at v - 0.01 and v + 0.01; reverse: one layer at v); the
# rows beyond them hold 0.6, which no table may read. Per seed 1..7 (textbook jsd | paper's jsd_paper):
#   copy    twin  .10 .12 .08 .11 .09 .10 .10 | .30 .31 .29 .30 .32 .30 .31
#           t5    .11 .10 .10 .12 .10 .11 .12 | .40 .42 .41 .39 .40 .43 .41
#           alibi .15 .15 .12 .17 .11 .15 .13 | .38 .45 .39 .42 .38 .46 .40
#           rope  .13 .14 .11 .13 .12 .13 .14 | .35 .36 .37 .34 .33 .36 .35
#   reverse copy's + .02, alibi's + .04; its twin of seed 7 not fitted (that seed's pairs with it left out)
# copy, textbook: alibi - twin .05 .03 .04 .06 .02 .05 .03, mean .0400, t-interval [.0269, .0531]
# (t(.975, 6) = 2.4469), p = 2/2^7 = .015625; t5 - alibi all below 0 (p .015625), t5 - rope too:
# Holm over the 2 gives .03125 each: supported. Paper's: t5 - rope all above 0 (Holm .03125): rope
# is nearer than t5, contradicted; t5 - alibi mixed (p .8594).
fake="$tmp/fake"
put_dist() {   # put_dist FOLDER LAYERS TEXTBOOK PAPER [old]: a distance.csv of the pair's values
  mkdir -p "$1"
  if [ "${5:-}" = old ]; then echo "layer,split,instances,jsd"; else echo "layer,split,instances,jsd,jsd_paper"; fi > "$1/distance.csv"
  awk -v L="$2" -v a="$3" -v b="$4" -v old="${5:-}" 'BEGIN {
    for (l = 0; l < L; l++) {
      o = L == 1 ? 0 : (l ? 0.01 : -0.01)
      if (old == "old") printf "%d,in,10,%.9f\n%d,longer,10,0.6\n", l, a + o, l
      else printf "%d,in,10,%.9f,%.9f\n%d,longer,10,0.6,0.6\n", l, a + o, b + o, l
    } }' >> "$1/distance.csv"
}
fake_run() {   # fake_run TASK LABEL SEED [FIT LINE]: a finished run without results of its own
  local d="$fake/runs/$1/$2/seed$3"
  mkdir -p "$d"; : > "$d/done"
  { echo "accuracy on $1 (exact match of the greedy answer, 10 test instances per bucket; trained on lengths 1-4):"
    echo "${4:-fit: fitted at step 300: validation accuracy 0.9531 >= 0.9000}"; } > "$d/train.log"
  printf 'step,loss\n1,2.0\n' > "$d/log.csv"
  { echo "task,scheme,seed,length,depth,split,n,correct,accuracy,skipped,pool,distinct,top_share"
    echo "$1,$2,$3,4,,id,10,10,1.000000,0,10,10,0.3000"; echo "$1,$2,$3,5,,ood,10,5,0.500000,0,10,10,0.3000"; } > "$d/eval.csv"
}
T_twin=(.10 .12 .08 .11 .09 .10 .10); P_twin=(.30 .31 .29 .30 .32 .30 .31)
T_t5=(.11 .10 .10 .12 .10 .11 .12);   P_t5=(.40 .42 .41 .39 .40 .43 .41)
T_alibi=(.15 .15 .12 .17 .11 .15 .13); P_alibi=(.38 .45 .39 .42 .38 .46 .40)
T_rope=(.13 .14 .11 .13 .12 .13 .14);  P_rope=(.35 .36 .37 .34 .33 .36 .35)
for task in copy reverse; do
  for s in 1 2 3 4 5 6 7; do
    fake_run $task nope $s
    for x in twin t5 alibi rope; do
      label=$x; [ $x = twin ] && label=nope-twin
      fit=""; [ $task$x$s = reversetwin7 ] && fit="fit: not fitted in 500 steps: validation accuracy 0.4120 < 0.9000"
      fake_run $task $label $s "$fit"
      eval "tv=\${T_$x[$((s - 1))]} pv=\${P_$x[$((s - 1))]}"
      add=0; [ $task = reverse ] && { add=0.02; [ $x = alibi ] && add=0.04; }
      layers=2; [ $task = reverse ] && layers=1
      old=""; [ $task$x$s = copyrope1 ] && old=old
      put_dist "$fake/runs/$task/$label/seed$s" $layers "$(awk "BEGIN{print $tv + $add}")" "$(awk "BEGIN{print $pv + $add}")" $old
    done
  done
done
# copy rope seed 1 has the old four columns: its paper's value is missing; the test below needs it,
# so give it the new file again after checking that the old one is read
fake_cmd=(./compare --out "$fake" --task copy,reverse --schemes nope,t5,alibi,rope --seeds 1,2,3,4,5,6,7 --attention-distance
          --train "$tmp/no-train" --report-only)
"${fake_cmd[@]}" > "$tmp/logf" 2>&1; check $? "--report-only with a distance.csv of the old columns" || tail -3 "$tmp/logf"
s="$fake/summary.md"
has() { grep -qF -- "$2" "$1"; check $? "$(basename "$1") lacks: $2"; }
has "$s" "| rope | 0.1286 [0.1187, 0.1385] (7) |"                        # the old file's textbook column read
has "$s" "| rope | 0.3517 [0.3362, 0.3671] (6) |"                        # its paper's left out: seeds 2-7
put_dist "$fake/runs/copy/rope/seed1" 2 .13 .35
"${fake_cmd[@]}" > "$tmp/logf" 2>&1; check $? "--report-only on the hand-made grid failed" || tail -3 "$tmp/logf"
sec() { awk -v h="$2" 'index($0, h) == 1 { on = 1 } on' "$s" | awk -v h="$3" 'index($0, h) == 1 { exit } { print }' > "$tmp/$1"; }
sec copy "## copy" "## reverse"; sec pooled "## Attention distance over all tasks" "## Mean reciprocal rank"
# copy, textbook then the paper's: the twin's row, alibi's and the claim
has "$tmp/copy" "| nope-twin | 0.1000 [0.0881, 0.1119] (7) | (the baseline) |"
has "$tmp/copy" "| alibi | 0.1400 [0.1207, 0.1593] (7) | 1: +0.0500, 2: +0.0300, 3: +0.0400, 4: +0.0600, 5: +0.0200, 6: +0.0500, 7: +0.0300 | 7 | +0.0400 | [+0.0269, +0.0531] | 0.01562 | farther than the twin |"
has "$tmp/copy" "| t5 | 0.1086 [0.1003, 0.1169] (7) | 1: +0.0100, 2: -0.0200, 3: +0.0200, 4: +0.0100, 5: +0.0100, 6: +0.0100, 7: +0.0200 | 7 | +0.0086 | [-0.0039, +0.0210] | 0.2188 | not distinguishable with 7 seeds |"
has "$tmp/copy" "| t5 - alibi | 1: -0.0400, 2: -0.0500, 3: -0.0200, 4: -0.0500, 5: -0.0100, 6: -0.0400, 7: -0.0100 | 7 | -0.0314 | [-0.0478, -0.0150] | 0.01562 | 0.03125 | t5 nearer |"
has "$tmp/copy" "| t5 - rope | 1: -0.0200, 2: -0.0400, 3: -0.0100, 4: -0.0100, 5: -0.0200, 6: -0.0200, 7: -0.0200 | 7 | -0.0200 | [-0.0292, -0.0108] | 0.01562 | 0.03125 | t5 nearer |"
has "$tmp/copy" "Verdict (the textbook JSD): NoPE's attention is nearest to t5's: supported: t5 is nearer than each of the 2 other schemes (Holm p < 0.05, the interval below 0)."
has "$tmp/copy" "| nope-twin | 0.3043 [0.2953, 0.3133] (7) | (the baseline) |"
has "$tmp/copy" "| rope | 0.3514 [0.3390, 0.3639] (7) | 1: +0.0500, 2: +0.0500, 3: +0.0800, 4: +0.0400, 5: +0.0100, 6: +0.0600, 7: +0.0400 | 7 | +0.0471 | [+0.0274, +0.0669] | 0.01562 | farther than the twin |"
has "$tmp/copy" "| t5 - alibi | 1: +0.0200, 2: -0.0300, 3: +0.0200, 4: -0.0300, 5: +0.0200, 6: -0.0300, 7: +0.0100 | 7 | -0.0029 | [-0.0266, +0.0209] | 0.8594 | 0.8594 | not distinguishable with 7 seeds |"
has "$tmp/copy" "| t5 - rope | 1: +0.0500, 2: +0.0600, 3: +0.0400, 4: +0.0500, 5: +0.0700, 6: +0.0700, 7: +0.0600 | 7 | +0.0571 | [+0.0469, +0.0674] | 0.01562 | 0.03125 | rope nearer |"
has "$tmp/copy" "NoPE's attention is nearest to t5's: contradicted: nearer to NoPE than t5 (Holm p < 0.05, the interval above 0): rope."
# the table by layer: the twin's row (layer 0: v - 0.01, layer 1: v + 0.01), textbook
has "$tmp/copy" "| nope-twin (vs nope, same start) | 7 | 0.0900 [0.0781, 0.1019] | 0.1100 [0.0981, 0.1219] | 0.1000 [0.0881, 0.1119] | 0.6000 [0.6000, 0.6000] |"
# pooled, the seed as unit (each seed's mean over both tasks; seed 7's twin on reverse not fitted)
has "$tmp/pooled" "| nope-twin | 0.1086 [0.0961, 0.1210] (7) | (the baseline) |"
has "$tmp/pooled" "| alibi | 0.1600 [0.1407, 0.1793] (7) | 1: +0.0600, 2: +0.0400, 3: +0.0500, 4: +0.0700, 5: +0.0300, 6: +0.0600, 7: +0.0300 | 7 | +0.0486 | [+0.0340, +0.0631] | 0.01562 | farther than the twin |"
has "$tmp/pooled" "| t5 - alibi | 1: -0.0500, 2: -0.0600, 3: -0.0300, 4: -0.0600, 5: -0.0200, 6: -0.0500, 7: -0.0200 | 7 | -0.0414 | [-0.0578, -0.0250] | 0.01562 | 0.03125 | t5 nearer |"
has "$tmp/pooled" "| 7 | -0.0129 | [-0.0366, +0.0109] | 0.25 | 0.25 | not distinguishable with 7 seeds |"
# without a t5 scheme: no claim; with 6 seeds: Holm cannot pass, and the line says how many could
./compare --out "$fake" --task copy --schemes nope,alibi,rope --seeds 1,2,3,4,5,6,7 --attention-distance --train "$tmp/no-train" --report-only > /dev/null 2>&1
check $? "--report-only without t5"
! grep -q "nearest to t5" "$s"; check $? "without a scheme labelled t5 there is no claim"
grep -qF "| alibi | 0.1400 [0.1207, 0.1593] (7) |" "$s"; check $? "without t5 the twin table stays"
./compare --out "$fake" --task copy --schemes nope,t5,alibi,rope --seeds 1,2,3,4,5,6 --attention-distance --train "$tmp/no-train" --report-only > /dev/null 2>&1
has "$s" "not shown: t5 is nearer with Holm p < 0.05 than 0 of the 2 other schemes. The smallest p the sign-flip test can give with 6 seeds is 0.03125, and Holm asks below 0.025 of the smallest of 2 p; 7 seeds or more could pass it."

# a third scheme that t5 cannot be told from (t5 - learned: -.01 +.01 -.01 +.01 -.01 +.01 -.02, p .7656):
# Holm over 3 gives .046875 to alibi and rope, which pass; the claim is not shown (2 of the 3)
L_t=(.12 .09 .11 .11 .11 .10 .14)
for sd in 1 2 3 4 5 6 7; do fake_run copy learned $sd; put_dist "$fake/runs/copy/learned/seed$sd" 2 ${L_t[$((sd - 1))]} .5; done
./compare --out "$fake" --task copy --schemes nope,t5,alibi,rope,learned --seeds 1,2,3,4,5,6,7 --attention-distance --train "$tmp/no-train" --report-only > /dev/null 2>&1
has "$s" "| t5 - alibi | 1: -0.0400, 2: -0.0500, 3: -0.0200, 4: -0.0500, 5: -0.0100, 6: -0.0400, 7: -0.0100 | 7 | -0.0314 | [-0.0478, -0.0150] | 0.01562 | 0.04688 | t5 nearer |"
has "$s" "Verdict (the textbook JSD): NoPE's attention is nearest to t5's: not shown: t5 is nearer with Holm p < 0.05 than 2 of the 3 other schemes."

# ---- end to end: a tiny grid with the best checkpoints (--select-every)
model="--layers 1 --heads 2 --dim 16 --batch 4 --log-every 1000 --steps 20 --select-every 10 --train-max 6 --test-max 10 --seq 32"
cmd=(./compare --out "$tmp/e2e" --task copy-repeat --schemes nope,alibi,t5 --seeds 1,2 --eval-per-length 5 --attention-distance
     --threads 1 --jobs 2)
"${cmd[@]}" -- $model > "$tmp/e2e.out" 2>&1
check $? "compare --attention-distance end to end" || tail -5 "$tmp/e2e.out"
grep -q "compare: 8 runs (1 tasks x 3 schemes x 2 seeds, and 2 NoPE twins for the attention distance's baseline), 0 already done, 8 to train" "$tmp/e2e.out"
check $? "the twins count among the runs: $(head -1 "$tmp/e2e.out")"
grep -q "^\[[1-8]/8\] copy-repeat nope-twin seed 2: done" "$tmp/e2e.out"; check $? "a twin's progress line"
r="$tmp/e2e/runs/copy-repeat"
for s in 1 2; do
  grep -q -- "--pe nope --seed $s --data-seed $((s + 1000003)) " "$r/nope-twin/seed$s/done"
  check $? "twin seed $s: nope's flags, --seed $s, --data-seed $((s + 1000003)): $(head -1 "$r/nope-twin/seed$s/done")"
  [ "$(cat "$r/nope-twin/seed$s/distance.pair")" = "$r/nope/seed$s/model.ckpt.best $r/nope-twin/seed$s/model.ckpt.best" ]
  check $? "twin seed $s: the distance of NoPE's best weights to the twin's: $(cat "$r/nope-twin/seed$s/distance.pair")"
  for x in nope alibi t5 nope-twin; do
    [ "$(head -1 "$r/$x/seed$s/distance.csv")" = "layer,split,instances,jsd,jsd_paper" ] &&
      [ "$(awk -F, 'NR > 1 && $4 != "" && $5 != ""' "$r/$x/seed$s/distance.csv" | wc -l)" = 2 ]
    check $? "$x seed $s: distance.csv with both definitions: $(cat "$r/$x/seed$s/distance.csv")"
  done
done
! diff -q <(losses "$r/nope/seed1/log.csv") <(losses "$r/nope-twin/seed1/log.csv") > /dev/null
check $? "the twin trains on other instances than NoPE (other losses)"
grep -qF "| nope-twin | " "$tmp/e2e/summary.md" && grep -qF "| t5 - alibi |" "$tmp/e2e/summary.md" &&
  grep -q "^0 " "$tmp/e2e/distance_copy-repeat.dat" && grep -q "nope-twin_hi" "$tmp/e2e/distance_copy-repeat.dat"
check $? "summary.md's twin table and claim, and the plot's data with the twin"
"${cmd[@]}" -- $model > "$tmp/e2e2.out" 2>&1
grep -q "8 already done, 0 to train" "$tmp/e2e2.out" && ! grep -q "attention distances" "$tmp/e2e2.out"
check $? "a second command keeps the runs, the twins and the distances: $(head -1 "$tmp/e2e2.out")"
expect_fail "--data-seed after --" "--data-seed after -- is set by ./compare itself" "${cmd[@]}" -- $model --data-seed 5

finish
