set terminal pngcairo size 1000,560 noenhanced
set output 'ppl_by_length.png'
set title 'perplexity by window, trained at 128 tokens (non-overlapping; y cut at 4x the best)'
set xlabel 'window (tokens)'
set ylabel 'perplexity'
set grid
set key outside right
set logscale x 2
set logscale y
set yrange [3.80302:16.0127]
set ytics 4, 1.25
set format y '%.3g'
set arrow from 128, graph 0 to 128, graph 1 nohead dt 2 lc rgb 'gray'
plot 'ppl_by_length.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#1f77b4' dt 1 title 'rope', \
     'ppl_by_length.dat' using 1:3 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#1f77b4' dt 2 title 'rope+linear', \
     'ppl_by_length.dat' using 1:4 with linespoints lw 2 pt 9 ps 0.5 lc rgb '#1f77b4' dt 2 title 'rope+linear+ft', \
     'ppl_by_length.dat' using 1:5 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#1f77b4' dt 3 title 'rope+dynamic', \
     'ppl_by_length.dat' using 1:6 with linespoints lw 2 pt 9 ps 0.5 lc rgb '#1f77b4' dt 3 title 'rope+dynamic+ft', \
     'ppl_by_length.dat' using 1:7 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#1f77b4' dt 4 title 'rope+yarn', \
     'ppl_by_length.dat' using 1:8 with linespoints lw 2 pt 9 ps 0.5 lc rgb '#1f77b4' dt 4 title 'rope+yarn+ft', \
     'ppl_by_length.dat' using 1:9 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#1f77b4' dt 5 title 'rope+longrope', \
     'ppl_by_length.dat' using 1:10 with linespoints lw 2 pt 9 ps 0.5 lc rgb '#1f77b4' dt 5 title 'rope+longrope+ft', \
     'ppl_by_length.dat' using 1:11 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#d62728' dt 1 title 'rope50', \
     'ppl_by_length.dat' using 1:20 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#2ca02c' dt 1 title 'prope25', \
     'ppl_by_length.dat' using 1:29 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#ff7f0e' dt 1 title 'nope', \
     'ppl_by_length.dat' using 1:38 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#9467bd' dt 1 title 'smollm3', \
     'ppl_by_length.dat' using 1:47 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#8c564b' dt 1 title 'alibi', \
     'ppl_by_length.dat' using 1:56 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#e377c2' dt 1 title 'sinusoidal', \
     'ppl_by_length.dat' using 1:65 with linespoints lw 2 pt 4 ps 1 lc rgb '#1f77b4' dt 1 title 'rope@512'
set terminal svg size 1000,560 noenhanced
set output 'ppl_by_length.svg'
replot
