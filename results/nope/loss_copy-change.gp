set terminal pngcairo size 1000,560 noenhanced
set output 'loss_copy-change.png'
set title 'copy-change: training loss (every scheme and seed)'
set xlabel 'step'
set ylabel 'loss (nats per target token)'
set grid
set key outside right
set datafile separator ','
set logscale y
set format y '%g'
plot 'runs/copy-change/nope/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title 'nope', \
     'runs/copy-change/nope/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/copy-change/nope/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/copy-change/nope/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/copy-change/nope/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/copy-change/nope/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/copy-change/nope/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/copy-change/nope/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/copy-change/t5/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title 't5', \
     'runs/copy-change/t5/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/copy-change/t5/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/copy-change/t5/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/copy-change/t5/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/copy-change/t5/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/copy-change/t5/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/copy-change/t5/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/copy-change/alibi/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title 'alibi', \
     'runs/copy-change/alibi/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/copy-change/alibi/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/copy-change/alibi/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/copy-change/alibi/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/copy-change/alibi/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/copy-change/alibi/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/copy-change/alibi/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/copy-change/rotary/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title 'rotary', \
     'runs/copy-change/rotary/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/copy-change/rotary/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/copy-change/rotary/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/copy-change/rotary/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/copy-change/rotary/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/copy-change/rotary/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/copy-change/rotary/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/copy-change/ape/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title 'ape', \
     'runs/copy-change/ape/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/copy-change/ape/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/copy-change/ape/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/copy-change/ape/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/copy-change/ape/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/copy-change/ape/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/copy-change/ape/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title ''
set terminal svg size 1000,560 noenhanced
set output 'loss_copy-change.svg'
replot
