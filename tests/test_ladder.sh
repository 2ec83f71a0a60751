#!/usr/bin/env bash
# tests/test_ladder.sh: ./ladder, the report of one grid at several sizes, on hand-made grids whose
# numbers are worked out by hand. Three sizes (1000, 10000, 100000 parameters), 3 tasks x 3 seeds
# x 3 schemes, the claims nope>t5 and t5>alibi. OOD accuracy (%) at sizes a, b, c:
#   nope 50, 60, 70    t5 50, 50, 50    alibi 60, 50, 40     (every task and seed)
# so nope - t5 = 0, +10, +20 and t5 - alibi = -10, 0, +10 at every (task, seed) pair. At one size:
# 9 pairs all of one sign give a sign-flip p of 2/2^9 = 0.00390625, all zero give 1; Holm over 2.
# The trend: every pair's slope against log10(parameters) is +10 points per decade.
# Size c lacks one run (sort, alibi, seed 3): t5>alibi then has 8 pairs there (p = 2/2^8); its
# trend takes that pair over the two sizes it has (slope +10 too). Sort's parameter counts are
# twice the others' (its own vocabulary), which moves its points, not its slopes. The MRR with
# ties broken at random: two tied for ranks 2 and 3 each get (1/2 + 1/3) / 2 = 0.4167. A fourth
# size without runs changes no test. The sensitivity table takes the seed as the unit (its mean over tasks).
. "$(dirname "$0")/lib.sh"

out="$tmp/lad"
make_size() {   # make_size NAME PARAMS NOPE T5 ALIBI [SKIP]
    local name=$1 params=$2 nope=$3 t5=$4 alibi=$5 skip=${6:-}
    cat > "$tmp/$name.txt" <<EOF
# a hand-made size
--task copy,reverse,sort
--schemes nope,t5,alibi
--seeds 1,2,3
--claims nope>t5,t5>alibi
-- --dim 32 --layers 2 --steps 10
EOF
    for t in copy reverse sort; do      # sort's vocabulary doubles its count: the same slopes
        mkdir -p "$out/$name/runs/$t/nope/seed2"
        echo "model: 2 layers, 2 heads, dim 32, context 32, vocab 256 | $( [ "$t" = sort ] && echo $((2 * params)) || echo "$params" ) parameters" \
            > "$out/$name/runs/$t/nope/seed2/train.log"
    done
    {
        echo "task,scheme,seed,fitted,fit_step,val_accuracy,id_accuracy,ood_accuracy,degenerate_lengths,best_step"
        for t in copy reverse sort; do for s in 1 2 3; do
            echo "$t,nope,$s,,,0.9,0.900000,$nope,,200"
            echo "$t,t5,$s,,,0.9,0.900000,$t5,,200"
            [ "$t,alibi,$s" = "$skip" ] || echo "$t,alibi,$s,,,0.8,0.800000,$alibi,,200"
        done; done
    } > "$out/$name/runs.csv"
}
make_size a 1000 0.5 0.5 0.6
make_size b 10000 0.6 0.5 0.5
make_size c 100000 0.7 0.5 0.4 sort,alibi,3

./ladder --out "$out" "$tmp/a.txt" "$tmp/b.txt" "$tmp/c.txt" > "$tmp/o" 2>&1
check $? "./ladder on three sizes" || cat "$tmp/o"
for f in ladder.csv mrr.csv claims.csv summary.md scale_copy.gp scale_copy.dat scale_mrr.gp scale_mrr.dat; do
    [ -s "$out/$f" ]; check $? "$f written"
done
c() { grep -q -- "$1" "$out/$2"; check $? "$2: $1" || grep -- "${3:-^}" "$out/$2" | head -5; }
c "^nope>t5,a,1000,9,0.0000,0.0000,0.0000,1,1,not distinguishable$" claims.csv nope
c "^t5>alibi,a,1000,9,-10.0000,-10.0000,-10.0000,0.00390625,0.0078125,contradicted$" claims.csv alibi
c "^nope>t5,b,10000,9,10.0000,10.0000,10.0000,0.00390625,0.0078125,supported$" claims.csv nope
c "^t5>alibi,b,10000,9,0.0000,0.0000,0.0000,1,1,not distinguishable$" claims.csv alibi
c "^nope>t5,c,100000,9,20.0000,20.0000,20.0000,0.00390625,0.0078125,supported$" claims.csv nope
c "^t5>alibi,c,100000,8,10.0000,10.0000,10.0000,0.0078125,0.0078125,supported$" claims.csv alibi
c "^nope>t5,trend,,9,10.0000,10.0000,10.0000,0.00390625,0.0078125,grows with size$" claims.csv trend
c "^t5>alibi,trend,,9,10.0000,10.0000,10.0000,0.00390625,0.0078125,grows with size$" claims.csv trend
c "^a,1000,nope,9,0.4167," mrr.csv ",nope,"
c "^a,1000,alibi,9,1.0000," mrr.csv ",alibi,"
c "^b,10000,t5,9,0.4167," mrr.csv ",t5,"
c "^c,100000,nope,9,1.0000," mrr.csv ",nope,"
c "^c,100000,alibi,8,0.3333," mrr.csv ",alibi,"
c "^c,200000,sort,alibi,2,40.0000,40.0000,40.0000,80.0000$" ladder.csv "sort,alibi"
c "^b,10000,copy,nope,3,60.0000,60.0000,60.0000,90.0000$" ladder.csv "copy,nope"
c "| c | $tmp/c.txt (.*) | \`--dim 32 --layers 2 --steps 10\` | 100000 | 26 of 27 |" summary.md "| c |"
c "changes: not distinguishable at a (0.001M parameters); supported at b to c (0.01M to 0.1M parameters) |$" summary.md "nope > t5"
# a claim whose verdict changes twice names each run of sizes (not only the first change)
c "changes: contradicted at a (0.001M parameters); not distinguishable at b (0.01M parameters); supported at c (0.1M parameters) |$" summary.md "t5 > alibi"
c "| nope > t5 | 9 | +10.00 | \[+10.00, +10.00\] | 0.00391 | 0.00781 | grows with size |" summary.md "nope > t5 | 9"
# the seed as the unit (sensitivity): each seed's mean over its tasks, so 3 units at each size:
# nope > t5 at c is +20 for every seed, p = 2/2^3 = 0.25, Holm over 2 = 0.5; t5 > alibi at c keeps
# seed 3 on its two tasks (+10)
sed -n '/^## The claims at each size, with the seed as the unit/,/^## The trend/p' "$out/summary.md" > "$tmp/bys"
grep -qF "| nope > t5 | +0.0 (p 1, Holm 1, n 3): not distinguishable | +10.0 (p 0.25, Holm 0.5, n 3): not distinguishable | +20.0 (p 0.25, Holm 0.5, n 3): not distinguishable |" "$tmp/bys"
check $? "the claims with the seed as the unit: $(grep 'nope > t5' "$tmp/bys")"
grep -qF "| t5 > alibi | -10.0 (p 0.25, Holm 0.5, n 3): not distinguishable | +0.0 (p 1, Holm 1, n 3): not distinguishable | +10.0 (p 0.25, Holm 0.5, n 3): not distinguishable |" "$tmp/bys"
check $? "the seed unit keeps a seed with a run missing: $(grep 't5 > alibi' "$tmp/bys")"
# the plot data: parameters, then mean, lo, hi of each scheme
c "^100000 70.0000 70.0000 70.0000 50.0000 50.0000 50.0000 40.0000 40.0000 40.0000$" scale_copy.dat "^100000"
if have gnuplot "the ladder's plots" "apt-get install gnuplot-nox"; then
    [ -s "$out/scale_copy.png" ] && [ -s "$out/scale_mrr.svg" ]; check $? "the plots drawn"
fi

# a fourth size whose grid has not reported yet (no folder): left out of every test, which stay as they were
cp "$out/claims.csv" "$tmp/claims3.csv"
sed 's/--dim 32/--dim 64/' "$tmp/c.txt" > "$tmp/d.txt"
./ladder --out "$out" "$tmp/a.txt" "$tmp/b.txt" "$tmp/c.txt" "$tmp/d.txt" > "$tmp/o4" 2>&1
check $? "./ladder with a size not run yet" || cat "$tmp/o4"
grep -q "d: no runs.csv yet" "$tmp/o4"; check $? "the size without runs is named"
diff <(grep -v ',d,' "$out/claims.csv") "$tmp/claims3.csv" > /dev/null; check $? "the claims and trends without it are the same"
c "| d | .* | 0 of 27 |" summary.md "| d |"
c "changes: not distinguishable at a (0.001M parameters); supported at b to c (0.01M to 0.1M parameters) |$" summary.md "nope > t5"

# two sizes alone: nope>t5 is supported at both (stable), t5>alibi changes once
./ladder --out "$out" "$tmp/b.txt" "$tmp/c.txt" > "$tmp/o2" 2>&1
check $? "./ladder on two sizes" || cat "$tmp/o2"
c "| nope > t5 | 9 | .* | stable: supported at every size |$" summary.md "nope > t5 | 9"
c "changes: not distinguishable at b (0.01M parameters); supported at c (0.1M parameters) |$" summary.md "t5 > alibi"

# refused: the sizes out of order, sizes that are not one grid, one size, no --out
expect_fail "the sizes from the largest" "from the smallest model to the largest" ./ladder --out "$out" "$tmp/c.txt" "$tmp/a.txt"
sed 's/--seeds 1,2,3/--seeds 1,2,4/' "$tmp/b.txt" > "$tmp/other.txt"
mkdir -p "$out/other"
expect_fail "sizes that are not one grid" "are not one grid at two sizes" ./ladder --out "$out" "$tmp/a.txt" "$tmp/other.txt"
expect_fail "one size" "give 2 to" ./ladder --out "$out" "$tmp/a.txt"
expect_fail "no --out" "give --out DIR" ./ladder "$tmp/a.txt" "$tmp/b.txt"
finish
