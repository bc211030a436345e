package store

// The views of migration 7, for SQL users and Grafana (dashboards/grafana): what a run's
// summary table shows, computed by the database. Like every migration, their text is never
// edited once released; a change is a new migration that replaces them.
//
// Both are portable: plain SQL, sqrt (a built-in of PostgreSQL, and of the SQLite this module
// compiles, which has SQLite's math functions) and no statistics functions, which differ
// between the backends.

// cellValuesView is every value that a cell's summary is computed from, as internal/analysis
// takes them: the metrics and resource figures of measured samples (not warm-up ones) that
// did not fail.
const cellValuesView = `CREATE VIEW cell_values AS
	SELECT s.run_id, s.target, s.path, s.workload, s.pairs, m.name, m.value
	FROM samples s JOIN metrics m ON m.run_id = s.run_id AND m.seq = s.seq
	WHERE s.warmup = 0 AND s.error = ''
	UNION ALL
	SELECT s.run_id, s.target, s.path, s.workload, s.pairs, r.name, r.value
	FROM samples s JOIN resources r ON r.run_id = s.run_id AND r.seq = s.seq
	WHERE s.warmup = 0 AND s.error = ''`

// cellSummariesView is one row per run, cell and metric: the number of values, their mean,
// sample standard deviation (divisor n-1, NULL for one value), extremes, and Student's
// t-interval of the mean at 95 % (NULL for one value), as internal/stats.Summarize computes
// them. The interval is the plain t-interval: cnibench also clips it to the metric's range
// (a loss stays within [0, 100]), which needs the catalogue's bounds that the database does
// not know; a reader that wants cnibench's figure clips it (the Grafana dashboards do).
//
// The standard deviation takes two passes (deviations from the mean), as gonum does, rather
// than the sum of squares, which loses every digit for values like 1e9 ± 1e3. The t quantile
// is exact (to double precision) up to 30 degrees of freedom and the Cornish-Fisher expansion
// to the fourth order beyond, within 2e-8 of it.
const cellSummariesView = `CREATE VIEW cell_summaries AS
	SELECT run_id, target, path, workload, pairs, name, n, mean, stddev, min_value, max_value,
		mean - t * stddev / sqrt(CAST(n AS DOUBLE PRECISION)) AS ci_low,
		mean + t * stddev / sqrt(CAST(n AS DOUBLE PRECISION)) AS ci_high
	FROM (
		SELECT c.run_id, c.target, c.path, c.workload, c.pairs, c.name, c.n, c.mean,
			c.min_value, c.max_value,
			CASE WHEN c.n > 1 THEN
				sqrt(SUM((v.value - c.mean) * (v.value - c.mean)) / CAST(c.n - 1 AS DOUBLE PRECISION))
			END AS stddev,
			CASE c.n - 1
				WHEN 0 THEN NULL
				WHEN 1 THEN 12.706204736174694
				WHEN 2 THEN 4.302652729749462
				WHEN 3 THEN 3.1824463052837078
				WHEN 4 THEN 2.7764451051977934
				WHEN 5 THEN 2.5705818356363146
				WHEN 6 THEN 2.4469118511449786
				WHEN 7 THEN 2.364624251592784
				WHEN 8 THEN 2.306004135204166
				WHEN 9 THEN 2.262157162798205
				WHEN 10 THEN 2.228138851986274
				WHEN 11 THEN 2.200985160091639
				WHEN 12 THEN 2.1788128296672284
				WHEN 13 THEN 2.1603686564627913
				WHEN 14 THEN 2.144786687917804
				WHEN 15 THEN 2.131449545559776
				WHEN 16 THEN 2.1199052992212546
				WHEN 17 THEN 2.1098155778333156
				WHEN 18 THEN 2.1009220402410382
				WHEN 19 THEN 2.0930240544083087
				WHEN 20 THEN 2.085963447265864
				WHEN 21 THEN 2.0796138447276795
				WHEN 22 THEN 2.0738730679040254
				WHEN 23 THEN 2.0686576104190486
				WHEN 24 THEN 2.0638985616280245
				WHEN 25 THEN 2.0595385527532972
				WHEN 26 THEN 2.0555294386428735
				WHEN 27 THEN 2.0518305164802846
				WHEN 28 THEN 2.0484071417952454
				WHEN 29 THEN 2.045229642132703
				WHEN 30 THEN 2.0422724563012378
				ELSE 1.959963984540054
					+ 2.372271230298562 / CAST(c.n - 1 AS DOUBLE PRECISION)
					+ 2.8224986157396112 / CAST((c.n - 1) * (c.n - 1) AS DOUBLE PRECISION)
					+ 2.555849679507722 / CAST((c.n - 1) * (c.n - 1) * (c.n - 1) AS DOUBLE PRECISION)
					+ 1.5895340533938225 / CAST((c.n - 1) * (c.n - 1) * (c.n - 1) * (c.n - 1) AS DOUBLE PRECISION)
			END AS t
		FROM (
			SELECT run_id, target, path, workload, pairs, name, COUNT(*) AS n, AVG(value) AS mean,
				MIN(value) AS min_value, MAX(value) AS max_value
			FROM cell_values
			GROUP BY run_id, target, path, workload, pairs, name
		) c
		JOIN cell_values v ON v.run_id = c.run_id AND v.target = c.target AND v.path = c.path
			AND v.workload = c.workload AND v.pairs = c.pairs AND v.name = c.name
		GROUP BY c.run_id, c.target, c.path, c.workload, c.pairs, c.name, c.n, c.mean, c.min_value, c.max_value
	) s`
