# bench/figures.sh — the figure helpers of the benchmark scripts that print
# PASS/FAIL tables (scale.sh, features.sh, walks.sh). Sourced.

# median: the median of the numbers on stdin, one per line; nan when any
# line is not a number (a failed run's nan must not slide the median to
# the faster runs: sort -g puts nan first) or there is none.
median() {
  sort -g | awk '$1 !~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ {bad = 1} {a[NR] = $1}
    END {if (bad || NR == 0) print "nan"; else print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
# ddsecs: the seconds dd reports on its stderr (stdin here).
ddsecs() { awk '/copied/ {for (i = 1; i <= NF; i++) if ($i == "s," || $i == "s") print $(i - 1)}'; }
# jnum FILE KEY: the first number after "KEY": in FILE (flat or nested JSON).
jnum() { tr -d ' \n' < "$1" | { grep -o "\"$2\":[-0-9.eE+]*" || true; } | head -n 1 | cut -d: -f2; }
# pf EXPR: PASS where the awk expression holds, else FAIL (a nan in it fails).
pf() { if [[ $1 != *nan* ]] && awk "BEGIN {exit !($1)}"; then echo PASS; else echo FAIL; fi; }
# fmt EXPR [FORMAT]: the awk expression's value (log() allowed), or nan.
fmt() { if [[ -z $1 || $1 == *nan* ]]; then echo nan; else awk "BEGIN {printf \"${2:-%.2f}\", $1}"; fi; }
# report HEADLINE OUT: the markdown report (HEADLINE, then the table of
# $ROWS: figure, value, unit, target, result, tab-separated) written to
# OUT, the same table on stdout; returns 1 if a row FAILs.
report() {
  {
    echo "$1"
    echo
    echo "| figure | value | unit | target | result |"
    echo "|---|---|---|---|---|"
    awk -F'\t' '{printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5}' "$ROWS"
  } > "$2"
  { printf 'figure\tvalue\tunit\ttarget\tresult\n'; cat "$ROWS"; } | column -t -s $'\t'
  ! grep -q $'\tFAIL$' "$ROWS"
}
