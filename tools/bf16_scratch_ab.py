# tools/bf16_scratch_ab.py: the summary of results/bench/bf16-scratch-ab-epyc.csv (docs/training.md
# quotes it): per round, each binary's bf16/fp32 ratio (runs one after the other); the medians, and a
# two-sided sign test of new minus old over the rounds.
# usage: /usr/bin/python3 tools/bf16_scratch_ab.py results/bench/bf16-scratch-ab-epyc.csv
import csv, statistics as st, sys
from math import comb
rows = list(csv.DictReader(open(sys.argv[1])))
for cfg in ['tiny', 'small', 'gpt2-124m']:
    rounds = sorted({x['round'] for x in rows if x['config'] == cfg}, key=int)
    if not rounds: continue
    def t(r, b, p):
        return float([x for x in rows if x['config'] == cfg and x['round'] == r and x['binary'] == b and x['precision'] == p][0]['tokens_per_s'])
    ratio = {b: [t(r, b, 'bf16') / t(r, b, 'fp32') for r in rounds] for b in ['old', 'new']}
    diffs = [n - o for n, o in zip(ratio['new'], ratio['old'])]
    pos, n = sum(d > 0 for d in diffs), len(diffs)
    p = min(1.0, 2 * sum(comb(n, i) for i in range(min(pos, n - pos) + 1)) / 2 ** n)
    print('%-10s %2d rounds | bf16/fp32 old: median %.3f (%.3f-%.3f) | new: median %.3f (%.3f-%.3f) | new - old: median %+.3f, '
          'positive in %d of %d, sign test p = %.4f' % (cfg, n, st.median(ratio['old']), min(ratio['old']), max(ratio['old']),
          st.median(ratio['new']), min(ratio['new']), max(ratio['new']), st.median(diffs), pos, n, p))
