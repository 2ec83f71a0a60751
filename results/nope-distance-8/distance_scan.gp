set terminal pngcairo size 1000,560 noenhanced
set output 'distance_scan.png'
set title 'scan: attention distance to NoPE by layer (JSD to the nearest head; mean, 95% t-interval)'
set xlabel 'layer'
set ylabel 'JSD (nats)'
set grid
set key outside right
set xtics 1
set offsets 0.3, 0.3, 0, 0
plot 'distance_scan.dat' using ($1 + -0.1):2:3:4 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '#1f77b4' title 'nope (another seed)', \
     'distance_scan.dat' using ($1 + -0.06):5:6:7 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '#d62728' title 't5', \
     'distance_scan.dat' using ($1 + -0.02):8:9:10 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '#2ca02c' title 'alibi', \
     'distance_scan.dat' using ($1 + 0.02):11:12:13 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '#ff7f0e' title 'rotary', \
     'distance_scan.dat' using ($1 + 0.06):14:15:16 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '#9467bd' title 'ape', \
     'distance_scan.dat' using ($1 + 0.1):17:18:19 with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '#8c564b' title 'nope-twin (same start)'
set terminal svg size 1000,560 noenhanced
set output 'distance_scan.svg'
replot
