set terminal pngcairo size 1000,560 noenhanced
set output 'ppl_by_length.png'
set title 'perplexity against evaluation window (trained at 64 tokens; non-overlapping windows; y cut at 4x the best)'
set xlabel 'window (tokens)'
set ylabel 'perplexity'
set grid
set key outside right
set logscale x 2
set logscale y
set yrange [6.44632:27.1424]
set ytics 6.79, 1.25
set format y '%.3g'
set arrow from 64, graph 0 to 64, graph 1 nohead dt 2 lc rgb 'gray'
plot 'ppl_by_length.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#1f77b4' dt 1 title 'nope', \
     'ppl_by_length.dat' using 1:7 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#d62728' dt 1 title 'learned', \
     'ppl_by_length.dat' using 1:12 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#2ca02c' dt 1 title 'sinusoidal', \
     'ppl_by_length.dat' using 1:17 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#ff7f0e' dt 1 title 'rope', \
     'ppl_by_length.dat' using 1:18 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#ff7f0e' dt 2 title 'rope+linear', \
     'ppl_by_length.dat' using 1:19 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#ff7f0e' dt 3 title 'rope+dynamic', \
     'ppl_by_length.dat' using 1:20 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#ff7f0e' dt 4 title 'rope+yarn', \
     'ppl_by_length.dat' using 1:21 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#ff7f0e' dt 5 title 'rope+longrope', \
     'ppl_by_length.dat' using 1:22 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#9467bd' dt 1 title 'alibi', \
     'ppl_by_length.dat' using 1:27 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#8c564b' dt 1 title 't5', \
     'ppl_by_length.dat' using 1:32 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#e377c2' dt 1 title 'kerple', \
     'ppl_by_length.dat' using 1:37 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#7f7f7f' dt 1 title 'fire', \
     'ppl_by_length.dat' using 1:42 with linespoints lw 2 pt 4 ps 1 lc rgb '#9467bd' dt 1 title 'alibi@128', \
     'ppl_by_length.dat' using 1:47 with linespoints lw 2 pt 4 ps 1 lc rgb '#2ca02c' dt 1 title 'sinusoidal@128', \
     'ppl_by_length.dat' using 1:52 with linespoints lw 2 pt 4 ps 1 lc rgb '#ff7f0e' dt 1 title 'rope@128'
set terminal svg size 1000,560 noenhanced
set output 'ppl_by_length.svg'
replot
