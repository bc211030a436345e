// Package pgserver gives tests a real PostgreSQL server: a throw-away cluster in a temporary
// directory, listening on 127.0.0.1 on a free port and on a unix socket inside that directory
// only, started once for a test binary by Main and stopped, its directory removed, when the
// tests end; should the test process die first (a panic, a timeout, SIGKILL), a janitor process
// does that instead (startJanitor). Each test gets a fresh database in it (NewDatabase). It is
// test support: nothing in the cnibench binary uses it.
//
// Main hands the server to the tests through the environment rather than a package variable,
// which also lets a test's child processes inherit it.
package pgserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
)

const (
	// EnvURL is the URL of a database on a server where the tests may create and drop
	// databases. Set it before "go test" to use an existing server instead of a throw-away
	// one (e.g. postgres://postgres:pw@localhost/postgres?sslmode=disable).
	EnvURL = "CNIBENCH_TEST_POSTGRES"
	// envUnavailable is set by Main when it could not start a server: "skip: why" or
	// "fail: why".
	envUnavailable = "CNIBENCH_TEST_POSTGRES_UNAVAILABLE"
	// envJanitor makes the test binary the janitor of the server in this directory (see
	// startJanitor).
	envJanitor = "CNIBENCH_TEST_POSTGRES_JANITOR"
)

// superuser is the throw-away cluster's superuser, which the tests connect as.
const superuser = "cnibench"

// Main runs a test binary's tests with a server: it starts one unless start is false (a test's
// child process, which inherits the server's URL) or EnvURL names one, runs the tests and stops
// it. A package's TestMain calls os.Exit(pgserver.Main(m, true)).
func Main(m *testing.M, start bool) int {
	if spec := os.Getenv(envJanitor); spec != "" {
		janitor(spec)
		return 0
	}
	flag.Parse() // for testing.Verbose
	if start && os.Getenv(EnvURL) == "" {
		srv, err := startPostgres()
		if err != nil {
			_ = os.Setenv(envUnavailable, err.Error())
			if testing.Verbose() {
				fmt.Fprintf(os.Stderr, "PostgreSQL test server: %v\n", err)
			}
		} else {
			defer srv.stop()
			_ = os.Setenv(EnvURL, srv.admin)
			if testing.Verbose() {
				fmt.Fprintf(os.Stderr, "PostgreSQL test server %s: %s, listening on 127.0.0.1:%d, ready in %v (initdb %v)\n",
					srv.version, srv.dir, srv.port, srv.startup.Round(time.Millisecond), srv.initdb.Round(time.Millisecond))
			}
		}
	}
	return m.Run()
}

// Require returns the URL of the server's admin database, or ends the test: it fails when
// PostgreSQL should be there (as root, as in CI) and skips otherwise.
func Require(t testing.TB) string {
	t.Helper()
	if admin := os.Getenv(EnvURL); admin != "" {
		return admin
	}
	why := os.Getenv(envUnavailable)
	if reason, ok := strings.CutPrefix(why, "skip: "); ok {
		t.Skip("PostgreSQL: " + reason)
	}
	t.Fatal("PostgreSQL: " + strings.TrimPrefix(why, "fail: "))
	return ""
}

// unavailable is why the server could not start; skip says the tests should skip rather
// than fail.
type unavailable struct {
	skip bool
	err  error
}

func (u unavailable) Error() string {
	if u.skip {
		return "skip: " + u.err.Error()
	}
	return "fail: " + u.err.Error()
}

// pgServer is a running throw-away PostgreSQL cluster.
type pgServer struct {
	dir     string // the temporary directory holding data/, sock/ and postgres.log
	port    int
	admin   string // URL of its postgres database as the superuser
	version string
	initdb  time.Duration // how long initdb took
	startup time.Duration // how long startPostgres took in all
	cmd     *exec.Cmd
	exited  chan struct{}  // closed once cmd has been waited for
	janitor *exec.Cmd      // see startJanitor
	alive   io.WriteCloser // the janitor's stdin
	// bin and cred are postgres's directory and user, to start it again (Server.Start).
	bin  string
	cred *syscall.Credential
}

// startPostgres creates a cluster with initdb and starts postgres on it. As root, both run
// as the postgres system user, because they refuse to run as root.
func startPostgres() (*pgServer, error) {
	begin := time.Now()
	root := os.Geteuid() == 0
	bin, err := findPostgresBin()
	if err != nil {
		if root {
			return nil, unavailable{err: fmt.Errorf("%w; run scripts/setup.sh, which installs the postgresql package", err)}
		}
		return nil, unavailable{skip: true, err: err}
	}
	var cred *syscall.Credential
	if root {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, unavailable{err: fmt.Errorf("look up the postgres user to run the server as: %w; run scripts/setup.sh", err)}
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "cnibench-pgtest-")
	if err != nil {
		return nil, unavailable{err: fmt.Errorf("create the server's directory: %w", err)}
	}
	srv := &pgServer{dir: dir, bin: bin, cred: cred}
	if err := srv.startJanitor(); err != nil {
		srv.stop()
		return nil, unavailable{err: err}
	}
	if err := srv.start(bin, cred); err != nil {
		srv.stop()
		return nil, unavailable{err: err}
	}
	srv.startup = time.Since(begin)
	return srv, nil
}

// findPostgresBin finds the directory of initdb and postgres: the newest
// /usr/lib/postgresql/<version>/bin (Debian's layout, which scripts/setup.sh gives CI),
// else the PATH.
func findPostgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return v
	}
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries (initdb, postgres) not found in /usr/lib/postgresql/*/bin or PATH")
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// start runs initdb and then postgres as cred's user (nil: this process's).
func (s *pgServer) start(bin string, cred *syscall.Credential) error {
	sock := filepath.Join(s.dir, "sock")
	pwfile := filepath.Join(s.dir, "pwfile")
	var pw [16]byte
	_, _ = rand.Read(pw[:])
	password := hex.EncodeToString(pw[:])
	if err := os.Mkdir(sock, 0o700); err != nil {
		return fmt.Errorf("create the socket directory: %w", err)
	}
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return fmt.Errorf("write the password file: %w", err)
	}
	if cred != nil {
		for _, p := range []string{s.dir, sock, pwfile} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return fmt.Errorf("hand %s to the postgres user: %w", p, err)
			}
		}
	}
	begin := time.Now()
	out, err := s.command(cred, filepath.Join(bin, "initdb"), "-D", filepath.Join(s.dir, "data"),
		"-U", superuser, "--pwfile", pwfile, "-E", "UTF8", "--locale", "C",
		// The socket is in a directory only the server's user can enter; over TCP (all the
		// tests use), the password is needed.
		"--auth-local", "trust", "--auth-host", "scram-sha-256", "--no-sync").CombinedOutput()
	s.initdb = time.Since(begin)
	_ = os.Remove(pwfile)
	if err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	if out, err := s.command(nil, filepath.Join(bin, "postgres"), "--version").Output(); err == nil {
		s.version = strings.TrimSpace(string(out))
	}

	// The free port is found by binding it and letting it go, so another process may take
	// it first: postgres then fails to bind, and we try another.
	var lastErr error
	for range 3 {
		if s.port, lastErr = FreePort(); lastErr != nil {
			return lastErr
		}
		s.admin = fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/postgres?sslmode=disable", superuser, password, s.port)
		if lastErr = s.run(bin, cred, sock); lastErr == nil {
			return nil
		}
		if !strings.Contains(lastErr.Error(), "could not bind") && !strings.Contains(lastErr.Error(), "already in use") {
			return lastErr
		}
	}
	return lastErr
}

// run starts postgres and waits until it accepts connections.
func (s *pgServer) run(bin string, cred *syscall.Credential, sock string) error {
	logPath := filepath.Join(s.dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create the server log: %w", err)
	}
	defer logFile.Close() // the child has its own descriptor
	s.cmd = s.command(cred, filepath.Join(bin, "postgres"), "-D", filepath.Join(s.dir, "data"),
		"-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+sock,
		// Durability is not what these tests are about, and the cluster is thrown away.
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200")
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// Should this process die without stopping the server (a panic, a test timeout, ^C),
	// the kernel tells the server to shut down at once, rather than leave it running.
	s.cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(s.cmd, s.exited)

	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ping(s.admin)
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited: %s", tail(string(log), 2000))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres not ready after 30s: %v: %s", err, tail(string(log), 2000))
		}
	}
}

// command is name with args, run as cred's user (nil: this process's) from the server's
// directory, which that user can enter.
func (s *pgServer) command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	return cmd
}

// startJanitor starts a process that cleans up after this one if it dies without calling
// stop (a panic, a test timeout, SIGKILL): the test binary again, which waits for the end of
// its stdin, a pipe from this process that the kernel closes however this process ends, and
// then stops the server if it still runs and removes its directory. It has its own process
// group, so that ^C in a terminal, which signals the foreground group, does not end it first.
func (s *pgServer) startJanitor() error {
	s.janitor = exec.Command(os.Args[0], "-test.run=^$")
	s.janitor.Env = append(os.Environ(), envJanitor+"="+s.dir)
	s.janitor.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if s.alive, err = s.janitor.StdinPipe(); err != nil {
		return fmt.Errorf("start the janitor: %w", err)
	}
	// Its stdout and stderr are /dev/null: had it this process's, "go test" would wait for
	// the janitor before reporting.
	if err := s.janitor.Start(); err != nil {
		return fmt.Errorf("start the janitor: %w", err)
	}
	return nil
}

// janitor is the janitor process's work for the server in dir (see startJanitor).
func janitor(dir string) {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test process closes it or is gone
	if pid := postmaster(dir); pid > 0 && running(pid) {
		// Immediate shutdown: the cluster is thrown away.
		_ = syscall.Kill(pid, syscall.SIGQUIT)
		for deadline := time.Now().Add(30 * time.Second); running(pid) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
	}
	_ = os.RemoveAll(dir)
}

// postmaster is the pid of the server running in dir, or 0. postgres writes its pid file when
// it starts and removes it when it shuts down; the command line is checked too, so that a
// pid file left by a killed server never makes the janitor signal another process that got
// its pid since.
func postmaster(dir string) int {
	data := filepath.Join(dir, "data")
	pidFile, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte(data)) {
		return 0
	}
	return pid
}

// running tells whether process pid exists and is not a zombie: an orphaned postmaster
// that has exited stays a zombie where nothing reaps orphans (a container whose first
// process is not an init), and signalling a zombie succeeds.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust the signal
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses, so look after the last ")".
	_, rest, ok := strings.Cut(string(stat[bytes.LastIndexByte(stat, ')')+1:]), " ")
	return !ok || !strings.HasPrefix(rest, "Z")
}

// stop shuts the server down, fast (rolling back open transactions), and removes its
// directory.
func (s *pgServer) stop() {
	s.halt()
	if err := os.RemoveAll(s.dir); err != nil {
		fmt.Fprintf(os.Stderr, "remove the PostgreSQL test server's directory: %v\n", err)
	}
	if s.janitor != nil {
		_ = s.alive.Close() // nothing left for it to do
		_ = s.janitor.Wait()
	}
}

// halt shuts the server down, fast (rolling back open transactions), keeping its data.
func (s *pgServer) halt() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping connects to url once.
func ping(url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// NewDatabase creates a database for the test on the test server and returns its URL.
// The database is dropped when the test ends.
//
// Where the server supports it, the database sorts text in ICU's English collation
// ("_x" < "a" < "B"), unlike the byte order of SQLite and of the "C" locale the test
// cluster is created with, so that a query relying on the database's collation for its
// order shows up as a difference between the backends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := Require(t)
	u, err := url.Parse(admin)
	if err != nil {
		// Neither the URL nor err: url.Error quotes the URL, password and all.
		t.Fatalf("%s is not a URL", EnvURL)
	}
	// Named after the test, to tell the databases apart in the server's log and activity.
	name := "cnibench_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '_'
	}, t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name += "_" + hex.EncodeToString(b[:])
	u.Path = "/" + name

	ctx := context.Background()
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	quoted := `"` + name + `"`
	if _, err := db.ExecContext(ctx, `CREATE DATABASE `+quoted+` TEMPLATE template0 ENCODING 'UTF8'
		LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LC_COLLATE 'C' LC_CTYPE 'C'`); err != nil {
		t.Logf("no ICU collation (%v): the database uses the server's default", err)
		if _, err := db.ExecContext(ctx, `CREATE DATABASE `+quoted+` TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
			t.Fatalf("create database %s: %v", name, err)
		}
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", admin)
		if err != nil {
			t.Error(err)
			return
		}
		defer db.Close()
		// FORCE: a test that failed may have left a store open.
		if _, err := db.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+quoted+` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return u.String()
}
