set terminal pngcairo size 1000,560 noenhanced
set output 'loss_retrieval.png'
set title 'retrieval: training loss (every scheme and seed)'
set xlabel 'step'
set ylabel 'loss (nats per target token)'
set grid
set key outside right
set datafile separator ','
set logscale y
set format y '%g'
plot 'runs/retrieval/rope/seed201/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title 'rope', \
     'runs/retrieval/rope/seed202/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/retrieval/rope/seed203/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/retrieval/rope/seed204/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/retrieval/rope/seed205/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/retrieval/rope/seed206/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/retrieval/rope/seed207/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/retrieval/rope/seed208/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/retrieval/rope50/seed201/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title 'rope50', \
     'runs/retrieval/rope50/seed202/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/retrieval/rope50/seed203/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/retrieval/rope50/seed204/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/retrieval/rope50/seed205/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/retrieval/rope50/seed206/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/retrieval/rope50/seed207/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/retrieval/rope50/seed208/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/retrieval/prope25/seed201/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title 'prope25', \
     'runs/retrieval/prope25/seed202/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/retrieval/prope25/seed203/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/retrieval/prope25/seed204/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/retrieval/prope25/seed205/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/retrieval/prope25/seed206/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/retrieval/prope25/seed207/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/retrieval/prope25/seed208/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/retrieval/nope/seed201/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title 'nope', \
     'runs/retrieval/nope/seed202/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/retrieval/nope/seed203/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/retrieval/nope/seed204/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/retrieval/nope/seed205/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/retrieval/nope/seed206/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/retrieval/nope/seed207/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/retrieval/nope/seed208/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/retrieval/smollm3/seed201/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title 'smollm3', \
     'runs/retrieval/smollm3/seed202/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/retrieval/smollm3/seed203/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/retrieval/smollm3/seed204/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/retrieval/smollm3/seed205/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/retrieval/smollm3/seed206/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/retrieval/smollm3/seed207/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/retrieval/smollm3/seed208/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/retrieval/alibi/seed201/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title 'alibi', \
     'runs/retrieval/alibi/seed202/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/retrieval/alibi/seed203/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/retrieval/alibi/seed204/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/retrieval/alibi/seed205/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/retrieval/alibi/seed206/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/retrieval/alibi/seed207/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/retrieval/alibi/seed208/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title ''
set terminal svg size 1000,560 noenhanced
set output 'loss_retrieval.svg'
replot
