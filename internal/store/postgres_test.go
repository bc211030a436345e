package store

import (
	"context"
	"database/sql"
	"github.com/cnibench/cnibench/internal/testsupport/pgserver"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkNoPassword fails the test if s shows a password of location.
func checkNoPassword(t *testing.T, location, s string) {
	t.Helper()
	u, err := url.Parse(location)
	if err != nil {
		return // a path: nothing secret in it
	}
	secrets := u.Query()["password"]
	if pw, ok := u.User.Password(); ok {
		secrets = append(secrets, pw)
	}
	for _, pw := range secrets {
		if pw != "" && strings.Contains(s, pw) {
			t.Errorf("the password of the location shows in %q", s)
		}
	}
}

func TestRedactLocation(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:s3cret@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"postgresql://u@h/db", "postgresql://u@h/db"},
		{"postgres://u:@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://h/db", "postgres://h/db"},
		{"postgres:///db?host=/run/postgresql", "postgres:///db?host=/run/postgresql"},
		{"postgres://u:s3cret@h1:5432,h2:5433/db", "postgres://u:xxxxx@h1:5432,h2:5433/db"},
		{"postgres://u:s%2Fcret@h/db", "postgres://u:xxxxx@h/db"},
		// Malformed: an unencoded "@" or "/" in the password.
		{"postgres://u:s3cr@t@h/db", "postgres://u:xxxxx@xxxxx@h/db"},
		{"postgres://u:s3/cret@h/db", "postgres://xxxxx@h/db"},
		{"postgres://u:s3?cr/et@h/db", "postgres://xxxxx@h/db"},
		// Query parameters.
		{"postgres://h/db?sslmode=disable&password=s3cret", "postgres://h/db?sslmode=disable&password=xxxxx"},
		{"postgres://h/db?password=s3cret&sslmode=disable", "postgres://h/db?password=xxxxx"},
		{"postgres://h/db?pass%77ord=s3cret", "postgres://h/db?pass%77ord=xxxxx"},
		{"postgres://h/db?sslpassword=s3cret", "postgres://h/db?sslpassword=xxxxx"},
		{"postgres://h/db?PASSWORD=s3cret", "postgres://h/db?PASSWORD=xxxxx"},
		{"postgres://h/db?password=s3&cret", "postgres://h/db?password=xxxxx"},
		{"postgres://h/db?application_name=a:b", "postgres://h/db?application_name=a:b"},
		// Other schemes and paths.
		{"mysql://u:s3cret@h/db", "mysql://u:xxxxx@h/db"},
		{"/var/lib/cnibench/results.db", "/var/lib/cnibench/results.db"},
		{"./u:s3cret@h.db", "./u:s3cret@h.db"}, // a path is shown as it is
	} {
		got := redactLocation(tc.in)
		if got != tc.want {
			t.Errorf("redactLocation(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.HasPrefix(tc.in, "./") {
			continue
		}
		for _, secret := range []string{"s3cret", "cret", "s3cr", "s3"} {
			if strings.Contains(got, secret) {
				t.Errorf("redactLocation(%q) = %q shows %q", tc.in, got, secret)
			}
		}
	}
}

// TestPostgresOpenErrors checks that Open's errors name the backend and the location and
// never show the password, whether the URL is malformed, the server unreachable or the
// password wrong.
func TestPostgresOpenErrors(t *testing.T) {
	ctx := context.Background()
	loc := pgserver.NewDatabase(t)
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	withPassword := func(pw string) string {
		v := *u
		v.User = url.UserPassword(v.User.Username(), pw)
		return v.String()
	}
	closed, err := pgserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	missing := *u
	missing.Path = "/no_such_database"
	for name, tc := range map[string]struct {
		location string
		want     string
	}{
		"wrong password":    {withPassword("wr0ng-s3cret"), "password authentication failed"},
		"unreachable":       {strings.Replace(withPassword("wr0ng-s3cret"), u.Host, "127.0.0.1:"+strconv.Itoa(closed), 1), "connect"},
		"missing database":  {missing.String(), "no_such_database"},
		"bad port":          {"postgres://u:wr0ng-s3cret@localhost:notaport/db", "invalid URL"},
		"bad escape":        {"postgres://u:wr0ng%zzs3cret@localhost/db", "invalid URL"},
		"stranded password": {"postgres://u:wr0ng/s3cret@localhost/db", "invalid URL"},
		"query password":    {"postgres://localhost/db?password=wr0ng&s3cret", "invalid URL"},
	} {
		_, err := Open(ctx, tc.location)
		if err == nil {
			t.Errorf("%s: Open(%s): no error", name, redactLocation(tc.location))
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "PostgreSQL results store "+redactLocation(tc.location)) ||
			!strings.Contains(msg, tc.want) {
			t.Errorf("%s: err = %s; want the backend, location and %q", name, msg, tc.want)
		}
		for _, secret := range []string{"wr0ng", "s3cret"} {
			if strings.Contains(msg, secret) {
				t.Errorf("%s: the error shows the password: %s", name, msg)
			}
		}
		checkNoPassword(t, loc, msg)
		t.Logf("%s: %s", name, msg)
	}
}

// TestPostgresLocation checks what Location and Backend say, and that a password given as
// a query parameter works and is not shown either.
func TestPostgresLocation(t *testing.T) {
	ctx := context.Background()
	loc := pgserver.NewDatabase(t)
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	q := u.Query()
	q.Set("password", pw)
	u.User = url.User(u.User.Username())
	u.RawQuery = q.Encode()
	for _, l := range []string{loc, u.String()} {
		d, err := Open(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		if d.Backend() != "postgres" || d.Location() != redactLocation(l) || !strings.Contains(d.Location(), passwordMask) {
			t.Errorf("Open(%s): Backend() = %q, Location() = %q", redactLocation(l), d.Backend(), d.Location())
		}
		checkNoPassword(t, loc, d.Location())
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPostgresNeedsUTF8 checks that a database in another encoding is refused: its text and
// prefix lookups would not behave as SQLite's.
func TestPostgresNeedsUTF8(t *testing.T) {
	ctx := context.Background()
	loc := pgserver.NewDatabase(t)
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", pgserver.Require(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	name := strings.TrimPrefix(u.Path, "/") + "_ascii"
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 ENCODING 'SQL_ASCII'
		LC_COLLATE 'C' LC_CTYPE 'C'`); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := admin.ExecContext(ctx, `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			t.Error(err)
		}
	}()
	u.Path = "/" + name
	if _, err := Open(ctx, u.String()); err == nil || !strings.Contains(err.Error(), "encoding is SQL_ASCII, want UTF8") {
		t.Errorf("Open(SQL_ASCII database): err = %v", err)
	}
}

// TestPostgresMigrationLock checks that migrations wait for the advisory lock, and that
// opening an up-to-date store does not.
func TestPostgresMigrationLock(t *testing.T) {
	ctx := context.Background()
	loc := pgserver.NewDatabase(t)
	holder, err := connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Another migrator, as far as the store can tell.
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLockKey)); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		d, err := Open(ctx, loc)
		if err == nil {
			err = d.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		t.Fatalf("Open migrated while another held the lock (err = %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	var waiting int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_locks
		WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	if waiting != 1 {
		t.Errorf("%d sessions waiting for an advisory lock, want Open's 1", waiting)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, int64(migrationLockKey)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open still waiting after the lock was released")
	}

	// Up to date: no lock needed, so a stuck migrator elsewhere does not block readers.
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLockKey)); err != nil {
		t.Fatal(err)
	}
	openCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d, err := Open(openCtx, loc)
	if err != nil {
		t.Fatalf("Open(up-to-date store) while the lock is held: %v", err)
	}
	_ = d.Close()
}

// TestPostgresSchema checks the one column whose type differs between the backends.
func TestPostgresSchema(t *testing.T) {
	ctx := context.Background()
	d := openTest(t, postgresBackend())
	var typ string
	if err := d.queryRow(ctx, d.db, `SELECT data_type FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'samples' AND column_name = 'raw'`).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != "bytea" {
		t.Errorf("samples.raw is %s, want bytea", typ)
	}
}
