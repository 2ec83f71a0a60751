set terminal pngcairo size 1000,560 noenhanced
set output 'loss_copy-repeat-change.png'
set title 'copy-repeat-change: training loss (every scheme and seed)'
set xlabel 'step'
set ylabel 'loss (nats per target token)'
set grid
set key outside right
set datafile separator ','
set logscale y
set format y '%g'
plot 'runs/copy-repeat-change/nope/seed3001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title 'nope', \
     'runs/copy-repeat-change/nope/seed3002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/copy-repeat-change/nope/seed3003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/copy-repeat-change/t5/seed3001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title 't5', \
     'runs/copy-repeat-change/t5/seed3002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/copy-repeat-change/t5/seed3003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/copy-repeat-change/alibi/seed3001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title 'alibi', \
     'runs/copy-repeat-change/alibi/seed3002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/copy-repeat-change/alibi/seed3003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/copy-repeat-change/rotary/seed3001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title 'rotary', \
     'runs/copy-repeat-change/rotary/seed3002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/copy-repeat-change/rotary/seed3003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/copy-repeat-change/ape/seed3001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title 'ape', \
     'runs/copy-repeat-change/ape/seed3002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/copy-repeat-change/ape/seed3003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title ''
set terminal svg size 1000,560 noenhanced
set output 'loss_copy-repeat-change.svg'
replot
