set terminal pngcairo size 1000,560 noenhanced
set output 'attention_collapse.png'
set title 'heads collapsed onto the first key, by layer (windows of 64 tokens; mean, 95% t-interval)'
set xlabel 'layer'
set ylabel 'fraction of heads collapsed'
set grid
set key outside right
set xtics 1
set yrange [-0.05:1.05]
set offsets 0.3, 0.3, 0, 0
plot 'attention_collapse.dat' using ($1 + -0.075):2:3:4 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '#1f77b4' title 'alibi', \
     'attention_collapse.dat' using ($1 + -0.025):5:6:7 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '#d62728' title 'rope', \
     'attention_collapse.dat' using ($1 + 0.025):8:9:10 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '#2ca02c' title 'nope', \
     'attention_collapse.dat' using ($1 + 0.075):11:12:13 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '#ff7f0e' title 't5'
set terminal svg size 1000,560 noenhanced
set output 'attention_collapse.svg'
replot
