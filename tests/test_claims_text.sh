#!/usr/bin/env bash
# tests/test_claims_text.sh: ./compare --claims on text grids (lab/report_claims.c). First the report
# alone on hand-made runs, every cell against numbers Python computed (its p by integrating the t
# density, its sign-flip p by enumerating the sign patterns); then a tiny real grid from a protocol
# file, whose verdicts are not known in advance but whose table must have the shape the test gives;
# then claims refused before any run.
. "$(dirname "$0")/lib.sh"
model="--layers 1 --heads 2 --dim 16 --batch 4 --log-every 1000"
cat README.md docs/*.md | head -c 60000 > "$tmp/text.txt"

# ---- hand-made runs: rope and alibi, 5 seeds, context 16, rope also with yarn; seed s has
#   16 tokens, non-overlapping:  alibi 9.5 + 0.1 s, rope 10 + 0.12 s (alibi lower on every seed)
#   64 tokens, non-overlapping:  rope 30 + s, rope+yarn 12 + 0.2 s, alibi 20 + 0.5 s (none for seed 5)
#   64 tokens, sliding:          alibi 11.0 11.3 10.8 11.1 11.2, rope 10.9 11.0 11.0 11.3 10.9
fd="$tmp/fake"
for s in 1 2 3 4 5; do
  for sc in rope alibi; do
    d="$fd/runs/text/$sc/seed$s"; mkdir -p "$d"; : > "$d/done"
    echo "model: 1 layers, 2 heads, dim 16, context 16, vocab 256 | 1 parameters" > "$d/train.log"
    printf 'step,loss\n1,2.0\n' > "$d/log.csv"
  done
  awk -v s=$s 'BEGIN { split("11.0 11.3 10.8 11.1 11.2", as); split("10.9 11.0 11.0 11.3 10.9", rs)
    print "window,mode,tokens,loss,ppl,note" > "'"$fd/runs/text/alibi/seed$s/ppl.csv"'"
    printf "16,nonoverlap,64,,%.6f,\n", 9.5 + 0.1 * s > "'"$fd/runs/text/alibi/seed$s/ppl.csv"'"
    if (s < 5) printf "64,nonoverlap,64,,%.6f,\n", 20 + 0.5 * s > "'"$fd/runs/text/alibi/seed$s/ppl.csv"'"
    else print "64,nonoverlap,0,,,no number for this seed" > "'"$fd/runs/text/alibi/seed$s/ppl.csv"'"
    printf "64,sliding,64,,%s,\n", as[s] > "'"$fd/runs/text/alibi/seed$s/ppl.csv"'"
    print "window,mode,tokens,loss,ppl,note" > "'"$fd/runs/text/rope/seed$s/ppl.csv"'"
    printf "16,nonoverlap,64,,%.6f,\n", 10 + 0.12 * s > "'"$fd/runs/text/rope/seed$s/ppl.csv"'"
    printf "64,nonoverlap,64,,%.6f,\n", 30 + s > "'"$fd/runs/text/rope/seed$s/ppl.csv"'"
    printf "64,sliding,64,,%s,\n", rs[s] > "'"$fd/runs/text/rope/seed$s/ppl.csv"'"
    print "window,mode,tokens,loss,ppl,note" > "'"$fd/runs/text/rope/seed$s/ppl_yarn.csv"'"
    printf "64,nonoverlap,64,,%.6f,\n", 12 + 0.2 * s > "'"$fd/runs/text/rope/seed$s/ppl_yarn.csv"'" }'
done
claims='alibi<rope@1,rope+yarn>rope*1.05@4,alibi<rope*1.02@4:sliding,alibi<rope@4,alibi<alibi*1.5@1'
report() { ./compare --out "$fd" --data "$tmp/text.txt" --schemes rope,alibi --rope-extensions yarn --seeds 1,2,3,4,5 \
  --eval-flags '--ppl-windows 1,4' --claims "$claims" --report-only "$@"; }
report > "$tmp/log1" 2>&1; check $? "--report-only with text claims failed:" || cat "$tmp/log1"
# alibi<rope@1: supported (t -56.93 on 4 df); rope+yarn>rope*1.05@4: yarn is far lower, contradicted;
# the sliding claim's ratio 1.0054 is within its interval's reach of 1.02: not distinguishable;
# alibi<rope@4 pairs the 4 seeds where alibi has a number; alibi against itself with a margin of 1.5
# has d = -log 1.5 on every seed: t -inf, p 0, supported. The sign-flip p of 5 seeds of one sign is
# 2/32. Holm over the 5 claims: 3 x 5.699e-07 (third smallest), 4 x 6.279e-08, 0.2283 (largest), ...
cat > "$tmp/want" <<'WANT'
| `alibi<rope@1` | 16 (1T) | 5 | 9.799 [9.605, 9.997] | 10.359 [10.126, 10.597] | 1: 0.9486, 2: 0.9473, 3: 0.9459, 4: 0.9447, 5: 0.9434 | 0.9460 | [0.9434, 0.9485] | -56.93 | 5.699e-07 | 1.71e-06 | 0.0625 | supported |
| `rope+yarn>rope*1.05@4` | 64 (4T) | 5 | 12.597 [12.210, 12.996] | 32.970 [31.063, 34.993] | 1: 0.3935, 2: 0.3875, 3: 0.3818, 4: 0.3765, 5: 0.3714 | 0.3821 | [0.3714, 0.3931] | -98.85 | 6.279e-08 | 2.512e-07 | 0.0625 | contradicted |
| `alibi<rope*1.02@4:sliding` | 64 (4T), sliding | 5 | 11.079 [10.842, 11.321] | 11.019 [10.818, 11.223] | 1: 1.0092, 2: 1.0273, 3: 0.9818, 4: 0.9823, 5: 1.0275 | 1.0054 | [0.9775, 1.0341] | -1.421 | 0.2283 | 0.2283 | 0.3125 | not distinguishable with 5 seeds |
| `alibi<rope@4` | 64 (4T) | 4 | 21.243 [20.240, 22.295] (4 of 5 seeds) | 32.970 [31.063, 34.993] | 1: 0.6613, 2: 0.6562, 3: 0.6515, 4: 0.6471 | 0.6540 | [0.6443, 0.6638] | -90.7 | 2.954e-06 | 5.909e-06 | 0.125 | supported |
| `alibi<alibi*1.5@1` | 16 (1T) | 5 | 9.799 [9.605, 9.997] | 9.799 [9.605, 9.997] | 1: 1.0000, 2: 1.0000, 3: 1.0000, 4: 1.0000, 5: 1.0000 | 1.0000 | [1.0000, 1.0000] | -inf | 0 | 0 | 0.0625 | supported |
WANT
grep '^| `' "$fd/summary.md" > "$tmp/got"
diff "$tmp/want" "$tmp/got" > /dev/null; check $? "the hand-made claims table:" || diff "$tmp/want" "$tmp/got"
grep -qxF 'With the chance of any false verdict among these 5 claims at most 5% (Holm p < 0.05): `alibi<rope@1` supported, `rope+yarn>rope*1.05@4` contradicted, `alibi<rope@4` supported, `alibi<alibi*1.5@1` supported.' "$fd/summary.md"
check $? "the claims' family line" || grep '^With the chance' "$fd/summary.md"
grep -q '^## Claims$' "$fd/summary.md" && grep -qF 'it cannot go below 2/2^n (0.0625 with 5 seeds).' "$fd/summary.md"
check $? "the claims' heading or the sign-flip floor"
cp "$fd/summary.md" "$tmp/first.md"
report > "$tmp/log1b" 2>&1 && cmp -s "$fd/summary.md" "$tmp/first.md"; check $? "a second report of the same runs differs"

# ---- a tiny real grid from a protocol: 2 schemes x 3 seeds, rope also with yarn, 2 steps
cat > "$tmp/proto.txt" <<PROTO
# the claims are fixed before the runs
--data $tmp/text.txt
--schemes rope,alibi
--seeds 1,2,3
--rope-extensions yarn
--eval-flags --ppl-tokens 512 --ppl-windows 1,4
--claims alibi<rope@1,rope+yarn<rope@4:sliding,rope>alibi*1.01@4,alibi<alibi*1.5@1
-- $model --steps 2 --seq 16
PROTO
./compare --protocol "$tmp/proto.txt" --out "$tmp/grid" --quiet --jobs 2 --threads 1 > "$tmp/log2" 2>&1
check $? "the protocol's text grid failed:" || cat "$tmp/log2"
g="$tmp/grid/summary.md"
grep -q "^Protocol: $tmp/proto.txt (FNV-1a 64 of its bytes: [0-9a-f]\{16\})" "$g"; check $? "summary.md does not name the protocol"
# every row: the claim, 3 seeds, p <= Holm p <= 1, the sign-flip p of 3 seeds (a multiple of 1/4), a verdict
awk -F' [|] ' '/^[|] `/ { n++
    ok = $3 == 3 && $10 + 0 <= $11 + 0 && $11 + 0 <= 1 && ($12 == "0.25" || $12 == "0.5" || $12 == "0.75" || $12 == "1") &&
         ($13 ~ /^(supported|contradicted|not distinguishable with 3 seeds) [|]$/)
    if (!ok) { bad++; print "bad row: " $0 } }
    END { exit !(n == 4 && !bad) }' "$g"
check $? "the real grid's claims table (4 rows of 3 seeds, Holm p >= p, a verdict each)" || sed -n '/^## Claims/,$p' "$g"
grep -q '^| `alibi<alibi\*1.5@1` | 16 (1T) | 3 | .* | 1.0000 | \[1.0000, 1.0000\] | -inf | 0 | 0 | 0.25 | supported |$' "$g" &&
  grep -q '^| `rope+yarn<rope@4:sliding` | 64 (4T), sliding | 3 |' "$g"
check $? "the real grid's claim of alibi against itself with a margin, or its sliding claim:" || grep '^| `' "$g"

# ---- claims refused before any run, naming the claim
text=(--data "$tmp/text.txt" --schemes rope,alibi --rope-extensions yarn --eval-flags '--ppl-windows 1,4')
expect_fail "an unknown row" "--claims: 'alibi<nope@1': 'nope' is not a row of the perplexity table (rope, rope+yarn, alibi)" \
  ./compare --out "$tmp/x" "${text[@]}" --claims 'alibi<nope@1'
expect_fail "an extension on a scheme without it" "'alibi+yarn' is not a row" ./compare --out "$tmp/x" "${text[@]}" --claims 'alibi+yarn<rope@1'
expect_fail "a window not evaluated" "--claims: 'alibi<rope@2': the window 2T is not evaluated; the runs are scored at 1,4" \
  ./compare --out "$tmp/x" "${text[@]}" --claims 'alibi<rope@1,alibi<rope@2'
expect_fail "a window not among the default ones" "the window 3T is not evaluated; the runs are scored at 0.5,1,2,4,8" \
  ./compare --out "$tmp/x" --data "$tmp/text.txt" --schemes rope,alibi --claims 'alibi<rope@3'
expect_fail "a row against itself without a margin" "'rope<rope@1' compares rope with itself" ./compare --out "$tmp/x" "${text[@]}" --claims 'rope<rope@1'
expect_fail "the task syntax on text" "--claims: 'alibi>rope': no window" ./compare --out "$tmp/x" "${text[@]}" --claims 'alibi>rope'
expect_fail "a bad margin" "'x' after * is not a margin" ./compare --out "$tmp/x" "${text[@]}" --claims 'alibi<rope*x@1'
expect_fail "a bad mode" "':slide' after the window is not a mode" ./compare --out "$tmp/x" "${text[@]}" --claims 'alibi<rope@1:slide'
sed 's/^--claims .*/--claims alibi<rope@1,alibi<t5@1/' "$tmp/proto.txt" > "$tmp/bad.txt"
expect_fail "a protocol's unknown row" "--claims: 'alibi<t5@1': 't5' is not a row" ./compare --protocol "$tmp/bad.txt" --out "$tmp/x"
[ ! -e "$tmp/x" ]; check $? "a refused claim left $tmp/x behind"
finish
