# tools/loss.gp: training and validation loss against step, from a ./train --log CSV.
#   gnuplot -e "csv='run.csv'; out='run.png'" tools/loss.gp
if (!exists("csv")) csv = 'run.csv'
if (!exists("out")) out = 'run.png'
set terminal pngcairo size 900,500 noenhanced
set output out
set datafile separator ','
set key top right
set grid
set xlabel 'step'
set ylabel 'cross-entropy (nats per token)'
set title sprintf('%s: training loss', csv)
plot csv using 1:2 skip 1 with lines lw 1 lc rgb '#8aa6c9' title 'train (per step)', \
     csv using 1:($3 == $3 ? $3 : NaN) skip 1 with linespoints lw 2 pt 7 ps 0.6 lc rgb '#c0392b' title 'validation'
