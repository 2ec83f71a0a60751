set terminal pngcairo size 1000,560 noenhanced
set output 'loss_text.png'
set title 'text: training loss (every scheme and seed)'
set xlabel 'step'
set ylabel 'loss (nats per target token)'
set grid
set key outside right
set datafile separator ','
set logscale y
set format y '%g'
plot 'runs/text/rope/seed101/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title 'rope', \
     'runs/text/rope/seed102/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/rope/seed103/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/rope/seed104/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/rope/seed105/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/rope/seed106/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/rope50/seed101/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title 'rope50', \
     'runs/text/rope50/seed102/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/rope50/seed103/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/rope50/seed104/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/rope50/seed105/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/rope50/seed106/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/prope25/seed101/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title 'prope25', \
     'runs/text/prope25/seed102/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/prope25/seed103/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/prope25/seed104/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/prope25/seed105/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/prope25/seed106/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/nope/seed101/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title 'nope', \
     'runs/text/nope/seed102/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/nope/seed103/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/nope/seed104/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/nope/seed105/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/nope/seed106/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/smollm3/seed101/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title 'smollm3', \
     'runs/text/smollm3/seed102/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/smollm3/seed103/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/smollm3/seed104/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/smollm3/seed105/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/smollm3/seed106/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/alibi/seed101/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title 'alibi', \
     'runs/text/alibi/seed102/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/alibi/seed103/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/alibi/seed104/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/alibi/seed105/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/alibi/seed106/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/sinusoidal/seed101/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title 'sinusoidal', \
     'runs/text/sinusoidal/seed102/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/sinusoidal/seed103/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/sinusoidal/seed104/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/sinusoidal/seed105/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/sinusoidal/seed106/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/rope@512/seed101/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 2 title 'rope@512', \
     'runs/text/rope@512/seed102/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 2 title '', \
     'runs/text/rope@512/seed103/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 2 title '', \
     'runs/text/rope@512/seed104/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 2 title '', \
     'runs/text/rope@512/seed105/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 2 title '', \
     'runs/text/rope@512/seed106/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 2 title ''
set terminal svg size 1000,560 noenhanced
set output 'loss_text.svg'
replot
