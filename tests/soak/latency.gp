# The soak's plot (tests/soak/report.py --plot): join latency of a `true`
# and the broker's and a server's RSS over the run. dir is given with -e.
set terminal svg size 900,480 dynamic font "sans,11"
set output dir.'/latency.svg'
set title "sbx soak: joined true, and RSS, over time"
set xlabel "seconds under load"
set ylabel "join latency (ms)"
set y2label "RSS (MiB)"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set key top left
plot dir.'/probe.dat' using 1:2 with points pt 7 ps 0.4 title "join latency", \
     dir.'/sample.dat' using 1:2 axes x1y2 with lines lw 2 title "broker RSS", \
     dir.'/sample.dat' using 1:3 axes x1y2 with lines lw 2 title "mean server RSS"
