package spool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/internal/store"
)

// FinishRun writes the run's ending once every kept sample is stored. While samples wait for
// an absent store, it waits for them up to Options.Wait, whatever ctx's deadline (the run's
// own context is usually over by then); should the store not come back in time, the run's
// ending joins the samples in the spool file and the error names that file and how to
// import it.
func (w *Writer) FinishRun(ctx context.Context, id, status string, finished time.Time, note string) error {
	ctx = context.WithoutCancel(ctx)
	deadline := time.Now().Add(w.opts.Wait)
	w.mu.Lock()
	w.run.Status, w.run.Finished, w.run.Note = status, finished, note
	done, kept := w.done, len(w.kept)
	w.mu.Unlock()
	if done != nil {
		w.opts.Log("waiting up to %s for the results store: %d samples of run %s wait for it", w.opts.Wait, kept, id)
		select {
		case w.kick <- struct{}{}:
		default:
		}
		select {
		case <-done:
		case <-time.After(time.Until(deadline)):
		}
	}
	w.mu.Lock()
	waiting, failed := len(w.kept) > 0, w.failed
	w.mu.Unlock()
	if waiting || failed != nil {
		return w.giveUp(failed)
	}
	pause := w.opts.Backoff
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := w.st.FinishRun(actx, id, status, finished, note)
		cancel()
		if err == nil || !store.Transient(err) {
			return err
		}
		w.mu.Lock()
		w.lastErr = err
		w.mu.Unlock()
		if time.Now().Add(pause).After(deadline) {
			return w.giveUp(nil)
		}
		time.Sleep(pause)
		pause = min(2*pause, w.opts.MaxBackoff)
	}
}

// giveUp stops the retrying and leaves the run's ending and its kept samples in the spool
// file, returning the error that names it. failed is why a sample was refused, if one was.
func (w *Writer) giveUp(failed error) error {
	w.stopOnce.Do(func() { close(w.stop) })
	w.mu.Lock()
	done := w.done
	w.mu.Unlock()
	if done != nil {
		<-done // at most one write's timeout
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.since.IsZero() {
		w.since = time.Now()
	}
	ferr := w.saveLocked()
	what := fmt.Sprintf("%d samples and the ending of run %s", len(w.kept), w.run.ID)
	if len(w.kept) > 0 {
		what = fmt.Sprintf("%d samples (seq %d to %d) and the ending of run %s", len(w.kept), w.kept[0].Seq, w.kept[len(w.kept)-1].Seq, w.run.ID)
	}
	why := fmt.Errorf("the results store did not come back within %s", w.opts.Wait)
	if w.lastErr != nil {
		why = fmt.Errorf("%w (%w)", why, w.lastErr)
	}
	if failed != nil {
		why = failed
	}
	if ferr != nil {
		return errors.Join(fmt.Errorf("%w: %s are lost", why, what), ferr)
	}
	w.opts.Log("%s are not in the results store; they are in %s", what, w.file)
	return fmt.Errorf("%w: %s are not in it; they are kept in %s: store them with `cnibench results import %s` once it is back",
		why, what, w.file, w.file)
}
