// Package spool keeps a run's samples while its results store cannot take them: a
// PostgreSQL server stopped, restarting or out of reach, or an SQLite file locked past its
// busy timeout. Writer stands between a run and its store: it writes each sample at once
// while the store answers; when a write fails for such a reason (store.Transient), it keeps
// that sample and every later one, in order, in memory and in a spool file, retries with
// backoff, and writes them when the store is back. A run that ends while the store is still
// away waits a bounded time for it; then the samples and the run's ending stay in the spool
// file, which `cnibench results import` writes into a store, and the run fails naming it.
//
// The spool file is the JSON export's layout (internal/export), so the same import reads
// both. It is rewritten whenever a sample is kept, so that a run killed during an outage
// loses nothing that had finished either.
package spool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
)

// Store is what a run writes to: the results store.
type Store interface {
	CreateRun(ctx context.Context, r record.Run) error
	AddTarget(ctx context.Context, t record.Target) error
	AddSample(ctx context.Context, s record.Sample) error
	FinishRun(ctx context.Context, id, status string, finished time.Time, note string) error
	MarkInterrupted(ctx context.Context) ([]record.Run, error)
	HasSample(ctx context.Context, runID string, seq int) (bool, error)
}

// Defaults of Options.
const (
	// DefaultWait is how long a run that ends during an outage waits for the store.
	DefaultWait = time.Minute
	// DefaultMaxKept bounds the samples kept in memory: at one every few seconds, hours of
	// a run. Past it, the run stops (its samples stay in the spool file).
	DefaultMaxKept = 10000
)

// Options configure a Writer.
type Options struct {
	// Dir is where the spool file is written; DefaultDir() when empty.
	Dir string
	// Wait bounds how long FinishRun waits for an absent store; DefaultWait when zero.
	Wait time.Duration
	// MaxKept bounds the samples kept while the store is away; DefaultMaxKept when zero.
	MaxKept int
	// Log prints a status line (what happened to the store, and to the samples); nil: none.
	Log func(format string, args ...any)
	// Backoff is the first pause between retries, doubled up to MaxBackoff; 250 ms and 5 s
	// when zero.
	Backoff, MaxBackoff time.Duration
}

// attemptTimeout bounds one write: a server that accepts connections but never answers is
// as away as a stopped one.
const attemptTimeout = 10 * time.Second

// DefaultDir is where spool files go unless told otherwise: "unsaved" beside the default
// SQLite store (~/.local/share/cnibench/unsaved).
func DefaultDir() string { return filepath.Join(filepath.Dir(store.DefaultPath()), "unsaved") }

// Writer writes a run to its store, keeping its samples while the store is away (see the
// package documentation). It is safe for concurrent use.
type Writer struct {
	st   Store
	opts Options

	// write serialises the writes of samples, so that they reach the store in order.
	write sync.Mutex

	mu       sync.Mutex
	run      record.Run
	targets  []record.Target
	kept     []record.Sample // waiting for the store, in order
	since    time.Time       // when the current outage began
	waited   int             // samples kept during the current outage
	lastErr  error           // the last transient error
	failed   error           // a kept sample the store refused for good
	file     string          // the spool file, once written
	done     chan struct{}   // closed when the retrying goroutine ends; nil when none runs
	kick     chan struct{}   // retry now
	stop     chan struct{}   // closed by FinishRun when it gives up
	stopOnce sync.Once
}

// New returns a Writer writing to st.
func New(st Store, o Options) *Writer {
	if o.Dir == "" {
		o.Dir = DefaultDir()
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.MaxKept <= 0 {
		o.MaxKept = DefaultMaxKept
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if o.Backoff <= 0 {
		o.Backoff = 250 * time.Millisecond
	}
	if o.MaxBackoff < o.Backoff {
		o.MaxBackoff = max(5*time.Second, o.Backoff)
	}
	return &Writer{st: st, opts: o, kick: make(chan struct{}, 1), stop: make(chan struct{})}
}

// CreateRun stores the run, and remembers it for the spool file.
func (w *Writer) CreateRun(ctx context.Context, r record.Run) error {
	if err := w.st.CreateRun(ctx, r); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.run = r
	return nil
}

// AddTarget stores the target, and remembers it for the spool file.
func (w *Writer) AddTarget(ctx context.Context, t record.Target) error {
	if err := w.st.AddTarget(ctx, t); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.targets = append(w.targets, t)
	return nil
}

// MarkInterrupted is the store's.
func (w *Writer) MarkInterrupted(ctx context.Context) ([]record.Run, error) {
	return w.st.MarkInterrupted(ctx)
}

// AddSample writes the sample, or keeps it when the store is away or samples are already
// waiting for it. It fails when the store refuses the sample for what it is, or when more
// samples wait than Options.MaxKept allows.
func (w *Writer) AddSample(ctx context.Context, s record.Sample) error {
	w.write.Lock()
	defer w.write.Unlock()
	w.mu.Lock()
	waiting, failed := len(w.kept) > 0, w.failed
	w.mu.Unlock()
	if failed != nil {
		// The run stops; the sample joins the others in the spool file rather than be lost.
		w.mu.Lock()
		w.kept = append(w.kept, s)
		_ = w.saveLocked() // the run's end saves again, and says if it cannot
		w.mu.Unlock()
		return failed
	}
	if !waiting {
		err := w.st.AddSample(ctx, s)
		if err == nil || !store.Transient(err) {
			return err
		}
		w.mu.Lock()
		w.lastErr = err
		w.mu.Unlock()
	}
	return w.keep(s)
}

// keep queues s behind the samples already waiting, rewrites the spool file, and starts
// the retrying if it is not running.
func (w *Writer) keep(s record.Sample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kept = append(w.kept, s)
	w.waited++
	first := w.since.IsZero()
	if first {
		w.since = time.Now()
	}
	ferr := w.saveLocked()
	if first {
		where := "in memory and in " + w.file
		if ferr != nil {
			where = fmt.Sprintf("in memory only (the spool file failed: %v)", ferr)
		}
		w.opts.Log("results store unreachable (%v): keeping the run's samples, in order, %s, and retrying",
			w.lastErr, where)
	} else if ferr != nil {
		w.opts.Log("results store still unreachable; %d samples kept in memory only (the spool file failed: %v)", len(w.kept), ferr)
	}
	if w.done == nil {
		w.done = make(chan struct{})
		go w.retry(w.done)
	}
	if len(w.kept) > w.opts.MaxKept {
		return fmt.Errorf("the results store has been unreachable for %s and %d samples wait for it, more than %d: stopping the run (%w)",
			time.Since(w.since).Round(time.Second), len(w.kept), w.opts.MaxKept, w.lastErr)
	}
	return nil
}

// retry writes the kept samples, oldest first, pausing with backoff while the store is
// away, until none is left, one is refused for good, or FinishRun gives up.
func (w *Writer) retry(done chan struct{}) {
	defer close(done)
	pause := w.opts.Backoff
	for {
		w.mu.Lock()
		if len(w.kept) == 0 {
			w.recoveredLocked()
			w.done = nil
			w.mu.Unlock()
			return
		}
		s := w.kept[0]
		w.mu.Unlock()

		err := w.writeKept(s)
		w.mu.Lock()
		switch {
		case err == nil:
			w.kept = w.kept[1:]
			pause = w.opts.Backoff
			w.mu.Unlock()
			continue
		case !store.Transient(err):
			w.failed = fmt.Errorf("store kept sample %d: %w", s.Seq, err)
			w.done = nil
			w.mu.Unlock()
			return
		}
		w.lastErr = err
		w.mu.Unlock()
		select {
		case <-w.stop:
			return
		case <-w.kick:
		case <-time.After(pause):
		}
		pause = min(2*pause, w.opts.MaxBackoff)
	}
}

// writeKept writes a kept sample unless it is stored already: the write that failed may
// have committed before its connection broke.
func (w *Writer) writeKept(s record.Sample) error {
	ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
	defer cancel()
	stored, err := w.st.HasSample(ctx, s.RunID, s.Seq)
	if err != nil || stored {
		return err
	}
	return w.st.AddSample(ctx, s)
}

// recoveredLocked reports the end of an outage and removes the spool file, whose samples
// are all stored.
func (w *Writer) recoveredLocked() {
	if w.since.IsZero() {
		return
	}
	w.opts.Log("results store back after %s: the %d samples that waited for it are stored, in order",
		time.Since(w.since).Round(100*time.Millisecond), w.waited)
	if w.file != "" {
		if err := os.Remove(w.file); err != nil && !errors.Is(err, os.ErrNotExist) {
			w.opts.Log("remove the spool file: %v", err)
		}
	}
	w.since, w.waited, w.file = time.Time{}, 0, ""
}

// saveLocked rewrites the spool file with the run, its targets and the kept samples.
func (w *Writer) saveLocked() error {
	if w.file == "" {
		w.file = filepath.Join(w.opts.Dir, w.run.ID+".json")
	}
	b := export.Bundle{Run: w.run, Targets: w.targets, Samples: w.kept}
	return writeFile(w.file, b)
}

// writeFile writes b to path as JSON, whole or not at all, and on disk before it returns.
func writeFile(path string, b export.Bundle) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create the spool directory: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write the spool file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	err = export.WriteJSON(tmp, b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write the spool file %s: %w", path, err)
	}
	return nil
}

// HasSample is the store's.
func (w *Writer) HasSample(ctx context.Context, runID string, seq int) (bool, error) {
	return w.st.HasSample(ctx, runID, seq)
}
