# attention_nope_layer0.gp, written by ./train --attention-map; the numbers are in attention_nope_layer0.dat.
# Re-render: cd into this folder, then: gnuplot attention_nope_layer0.gp
set encoding utf8
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 1352,1382 noenhanced font ',9'
} else {
    set terminal png size 1352,1382 noenhanced
}
set output 'attention_nope_layer0.png'
set palette defined (0 '#ffffff', 0.15 '#c6dbef', 0.4 '#6baed6', 0.7 '#2171b5', 1 '#08306b')
set multiplot layout 2,2 title 'attention, layer 0 (nope), 46 tokens (colours up to the largest p below row 0)'
set size square
set xrange [-0.5:45.5]
set yrange [45.5:-0.5]
set xlabel 'key position j'
set ylabel 'query position i'
set xtics ('114' 0, '101' 1, '112' 2, '58' 3, '684' 4, '684' 5, '684' 6, '684' 7, '684' 8, '684' 9, '684' 10, '684' 11, '684' 12, '684' 13, '684' 14, '684' 15, '684' 16, '684' 17, '684' 18, '684' 19, '684' 20, '684' 21, '684' 22, '684' 23, '61' 24, '684' 25, '684' 26, '684' 27, '684' 28, '684' 29, '684' 30, '684' 31, '684' 32, '684' 33, '684' 34, '684' 35, '684' 36, '684' 37, '684' 38, '684' 39, '684' 40, '684' 41, '684' 42, '684' 43, '684' 44, '10' 45) rotate by 90 right font ',7'
set ytics ('114' 0, '101' 1, '112' 2, '58' 3, '684' 4, '684' 5, '684' 6, '684' 7, '684' 8, '684' 9, '684' 10, '684' 11, '684' 12, '684' 13, '684' 14, '684' 15, '684' 16, '684' 17, '684' 18, '684' 19, '684' 20, '684' 21, '684' 22, '684' 23, '61' 24, '684' 25, '684' 26, '684' 27, '684' 28, '684' 29, '684' 30, '684' 31, '684' 32, '684' 33, '684' 34, '684' 35, '684' 36, '684' 37, '684' 38, '684' 39, '684' 40, '684' 41, '684' 42, '684' 43, '684' 44, '10' 45) font ',7'
set tics out nomirror
set cbtics font ',7'
set cbrange [0:0.60089]
set title 'layer 0 head 0'
plot 'attention_nope_layer0.dat' index 0 matrix with image notitle
set cbrange [0:0.513166]
set title 'layer 0 head 1'
plot 'attention_nope_layer0.dat' index 1 matrix with image notitle
set cbrange [0:0.960962]
set title 'layer 0 head 2'
plot 'attention_nope_layer0.dat' index 2 matrix with image notitle
set cbrange [0:0.546291]
set title 'layer 0 head 3'
plot 'attention_nope_layer0.dat' index 3 matrix with image notitle
unset multiplot
