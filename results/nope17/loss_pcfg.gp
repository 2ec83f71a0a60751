set terminal pngcairo size 1000,560 noenhanced
set output 'loss_pcfg.png'
set title 'pcfg: training loss (every scheme and seed)'
set xlabel 'step'
set ylabel 'loss (nats per target token)'
set grid
set key outside right
set datafile separator ','
set logscale y
set format y '%g'
plot 'runs/pcfg/nope/seed1001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title 'nope', \
     'runs/pcfg/nope/seed1002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/pcfg/nope/seed1003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/pcfg/t5/seed1001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title 't5', \
     'runs/pcfg/t5/seed1002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/pcfg/t5/seed1003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/pcfg/alibi/seed1001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title 'alibi', \
     'runs/pcfg/alibi/seed1002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/pcfg/alibi/seed1003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/pcfg/rotary/seed1001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title 'rotary', \
     'runs/pcfg/rotary/seed1002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/pcfg/rotary/seed1003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/pcfg/ape/seed1001/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title 'ape', \
     'runs/pcfg/ape/seed1002/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/pcfg/ape/seed1003/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title ''
set terminal svg size 1000,560 noenhanced
set output 'loss_pcfg.svg'
replot
