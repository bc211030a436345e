# Prints, after a failed `go test -v`, each failed test's name and the last lines it printed,
# so the tail of a long log (all CI shows) says what failed and why. Input: go test output; with
# -v a test's lines follow its "=== RUN", without it they follow its "--- FAIL".
/^=== (RUN|NAME|CONT)/ { cur = $3; next }
/^ *--- FAIL: / {
	name = $3
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	cur = name
	next
}
/^ *--- (PASS|SKIP): / || /^=== PAUSE/ { next }
/^(ok|FAIL|PASS)([ \t]|$)/ { cur = ""; next }
cur != "" { lines[cur, ++count[cur]] = $0 }
END {
	if (n == 0) exit
	printf "\nfailed tests (%d), each with the last lines it printed:\n", n
	for (i = 1; i <= n; i++) {
		name = order[i]
		printf "\n--- FAIL: %s\n", name
		from = count[name] - 40
		if (from < 1) from = 1
		for (j = from; j <= count[name]; j++) print lines[name, j]
	}
}
