set terminal pngcairo size 900,520 noenhanced
set output 'scale_copy-repeat.png'
set title 'copy-repeat: OOD accuracy against model size (mean over seeds, 95% t-interval)'
set xlabel 'parameters'
set ylabel 'OOD exact match (%)'
set logscale x
set grid
set key outside right
set offsets graph 0.05, graph 0.05, 0, 0
plot 'scale_copy-repeat.dat' using 1:2:3:4 with yerrorlines lw 1.5 lc rgb '#1f77b4' title 'nope', \
     'scale_copy-repeat.dat' using 1:5:6:7 with yerrorlines lw 1.5 lc rgb '#d62728' title 't5', \
     'scale_copy-repeat.dat' using 1:8:9:10 with yerrorlines lw 1.5 lc rgb '#2ca02c' title 'alibi', \
     'scale_copy-repeat.dat' using 1:11:12:13 with yerrorlines lw 1.5 lc rgb '#ff7f0e' title 'rotary', \
     'scale_copy-repeat.dat' using 1:14:15:16 with yerrorlines lw 1.5 lc rgb '#9467bd' title 'ape'
set terminal svg size 900,520 noenhanced
set output 'scale_copy-repeat.svg'
set title 'copy-repeat: OOD accuracy against model size (mean over seeds, 95% t-interval)'
set xlabel 'parameters'
set ylabel 'OOD exact match (%)'
set logscale x
set grid
set key outside right
set offsets graph 0.05, graph 0.05, 0, 0
plot 'scale_copy-repeat.dat' using 1:2:3:4 with yerrorlines lw 1.5 lc rgb '#1f77b4' title 'nope', \
     'scale_copy-repeat.dat' using 1:5:6:7 with yerrorlines lw 1.5 lc rgb '#d62728' title 't5', \
     'scale_copy-repeat.dat' using 1:8:9:10 with yerrorlines lw 1.5 lc rgb '#2ca02c' title 'alibi', \
     'scale_copy-repeat.dat' using 1:11:12:13 with yerrorlines lw 1.5 lc rgb '#ff7f0e' title 'rotary', \
     'scale_copy-repeat.dat' using 1:14:15:16 with yerrorlines lw 1.5 lc rgb '#9467bd' title 'ape'
