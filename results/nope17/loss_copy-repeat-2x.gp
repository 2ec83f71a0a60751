set terminal pngcairo size 1000,560 noenhanced
set output 'loss_copy-repeat-2x.png'
set title 'copy-repeat-2x: training loss (every scheme and seed)'
set xlabel 'step'
set ylabel 'loss (nats per target token)'
set grid
set key outside right
set datafile separator ','
set logscale y
set format y '%g'
plot 'runs/copy-repeat-2x/nope/seed1001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title 'nope', \
     'runs/copy-repeat-2x/nope/seed1002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/copy-repeat-2x/nope/seed1003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/copy-repeat-2x/t5/seed1001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title 't5', \
     'runs/copy-repeat-2x/t5/seed1002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/copy-repeat-2x/t5/seed1003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/copy-repeat-2x/alibi/seed1001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title 'alibi', \
     'runs/copy-repeat-2x/alibi/seed1002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/copy-repeat-2x/alibi/seed1003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/copy-repeat-2x/rotary/seed1001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title 'rotary', \
     'runs/copy-repeat-2x/rotary/seed1002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/copy-repeat-2x/rotary/seed1003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/copy-repeat-2x/ape/seed1001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title 'ape', \
     'runs/copy-repeat-2x/ape/seed1002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/copy-repeat-2x/ape/seed1003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title ''
set terminal svg size 1000,560 noenhanced
set output 'loss_copy-repeat-2x.svg'
replot
