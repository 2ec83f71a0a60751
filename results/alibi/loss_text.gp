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
plot 'runs/text/nope/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title 'nope', \
     'runs/text/nope/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/nope/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/nope/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/nope/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/nope/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/nope/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/nope/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/nope/seed9/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#1f77b4' dt 1 title '', \
     'runs/text/learned/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title 'learned', \
     'runs/text/learned/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/learned/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/learned/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/learned/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/learned/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/learned/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/learned/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/learned/seed9/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#d62728' dt 1 title '', \
     'runs/text/sinusoidal/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title 'sinusoidal', \
     'runs/text/sinusoidal/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/sinusoidal/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/sinusoidal/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/sinusoidal/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/sinusoidal/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/sinusoidal/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/sinusoidal/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/sinusoidal/seed9/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 1 title '', \
     'runs/text/rope/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title 'rope', \
     'runs/text/rope/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/rope/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/rope/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/rope/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/rope/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/rope/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/rope/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/rope/seed9/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 1 title '', \
     'runs/text/alibi/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title 'alibi', \
     'runs/text/alibi/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/alibi/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/alibi/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/alibi/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/alibi/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/alibi/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/alibi/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/alibi/seed9/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 1 title '', \
     'runs/text/t5/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title 't5', \
     'runs/text/t5/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/t5/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/t5/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/t5/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/t5/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/t5/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/t5/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/t5/seed9/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#8c564b' dt 1 title '', \
     'runs/text/kerple/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title 'kerple', \
     'runs/text/kerple/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/kerple/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/kerple/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/kerple/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/kerple/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/kerple/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/kerple/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/kerple/seed9/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#e377c2' dt 1 title '', \
     'runs/text/fire/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#7f7f7f' dt 1 title 'fire', \
     'runs/text/fire/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#7f7f7f' dt 1 title '', \
     'runs/text/fire/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#7f7f7f' dt 1 title '', \
     'runs/text/fire/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#7f7f7f' dt 1 title '', \
     'runs/text/fire/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#7f7f7f' dt 1 title '', \
     'runs/text/fire/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#7f7f7f' dt 1 title '', \
     'runs/text/fire/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#7f7f7f' dt 1 title '', \
     'runs/text/fire/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#7f7f7f' dt 1 title '', \
     'runs/text/fire/seed9/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#7f7f7f' dt 1 title '', \
     'runs/text/alibi@128/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 2 title 'alibi@128', \
     'runs/text/alibi@128/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 2 title '', \
     'runs/text/alibi@128/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 2 title '', \
     'runs/text/alibi@128/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 2 title '', \
     'runs/text/alibi@128/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 2 title '', \
     'runs/text/alibi@128/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 2 title '', \
     'runs/text/alibi@128/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 2 title '', \
     'runs/text/alibi@128/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 2 title '', \
     'runs/text/alibi@128/seed9/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#9467bd' dt 2 title '', \
     'runs/text/sinusoidal@128/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 2 title 'sinusoidal@128', \
     'runs/text/sinusoidal@128/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 2 title '', \
     'runs/text/sinusoidal@128/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 2 title '', \
     'runs/text/sinusoidal@128/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 2 title '', \
     'runs/text/sinusoidal@128/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 2 title '', \
     'runs/text/sinusoidal@128/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 2 title '', \
     'runs/text/sinusoidal@128/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 2 title '', \
     'runs/text/sinusoidal@128/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 2 title '', \
     'runs/text/sinusoidal@128/seed9/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#2ca02c' dt 2 title '', \
     'runs/text/rope@128/seed1/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 2 title 'rope@128', \
     'runs/text/rope@128/seed2/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 2 title '', \
     'runs/text/rope@128/seed3/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 2 title '', \
     'runs/text/rope@128/seed4/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 2 title '', \
     'runs/text/rope@128/seed5/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 2 title '', \
     'runs/text/rope@128/seed6/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 2 title '', \
     'runs/text/rope@128/seed7/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 2 title '', \
     'runs/text/rope@128/seed8/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 2 title '', \
     'runs/text/rope@128/seed9/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '#ff7f0e' dt 2 title ''
set terminal svg size 1000,560 noenhanced
set output 'loss_text.svg'
replot
