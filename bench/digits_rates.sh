# Shared by the bench scripts that run the digits examples (sourced).

# The median samples/s of the epochs after the first, from an example's output.
rate() {
  grep -oE '[0-9]+ samples/s' | awk 'NR > 1 { v[n++] = $1 } END {
    if (n == 0) { print "-"; exit }
    for (i = 0; i < n; ++i) for (j = i + 1; j < n; ++j) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    print (n % 2) ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2 }'
}

# The median of the numbers on standard input, one a line ("-" for none).
median() { sort -g | awk '{ v[n++] = $1 } END { if (n == 0) print "-"; else print (n % 2) ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2 }'; }
