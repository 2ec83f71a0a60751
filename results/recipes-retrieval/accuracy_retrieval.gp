set terminal pngcairo size 1000,560 noenhanced
set output 'accuracy_retrieval.png'
set title 'retrieval: accuracy against length (trained on <= 64; runs: mean and 95% t-band over seeds)'
set xlabel 'length'
set ylabel 'accuracy'
set grid
set key outside right
set yrange [-0.02:1.02]
set arrow from 64.5, graph 0 to 64.5, graph 1 nohead dt 2 lc rgb 'gray'
plot 'accuracy_retrieval.dat' using 1:3:4 with filledcurves fs transparent solid 0.15 noborder lc rgb '#1f77b4' notitle, \
     'accuracy_retrieval.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#1f77b4' title 'rope', \
     'accuracy_retrieval.dat' using 1:6:7 with filledcurves fs transparent solid 0.15 noborder lc rgb '#d62728' notitle, \
     'accuracy_retrieval.dat' using 1:5 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#d62728' title 'rope50', \
     'accuracy_retrieval.dat' using 1:9:10 with filledcurves fs transparent solid 0.15 noborder lc rgb '#2ca02c' notitle, \
     'accuracy_retrieval.dat' using 1:8 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#2ca02c' title 'prope25', \
     'accuracy_retrieval.dat' using 1:12:13 with filledcurves fs transparent solid 0.15 noborder lc rgb '#ff7f0e' notitle, \
     'accuracy_retrieval.dat' using 1:11 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#ff7f0e' title 'nope', \
     'accuracy_retrieval.dat' using 1:15:16 with filledcurves fs transparent solid 0.15 noborder lc rgb '#9467bd' notitle, \
     'accuracy_retrieval.dat' using 1:14 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#9467bd' title 'smollm3', \
     'accuracy_retrieval.dat' using 1:18:19 with filledcurves fs transparent solid 0.15 noborder lc rgb '#8c564b' notitle, \
     'accuracy_retrieval.dat' using 1:17 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#8c564b' title 'alibi'
set terminal svg size 1000,560 noenhanced
set output 'accuracy_retrieval.svg'
replot
