// Command cnibench benchmarks Kubernetes pod networking and container runtimes, on an
// embedded local cluster or any cluster reachable by kubeconfig.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

func main() {
	// client-go reports through klog what it cannot return, such as the exec streams torn
	// down by Ctrl-C ("Unhandled Error" err="io: read/write on closed pipe"), in between the
	// progress lines; the samples concerned report their own errors. Discarded, not written to
	// klog's default files either; fatal ones still reach stderr.
	quietKlog()
	if err := closeInheritedOnExec(); err != nil {
		fmt.Fprintln(os.Stderr, "error: mark inherited descriptors close-on-exec:", err)
		os.Exit(1)
	}
	// Ctrl-C cancels the context: long operations stop cleanly and remove what they created.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := executeCommand(ctx, newRootCommand()); err != nil {
		stop()
		// A command may end with its own status (the gate's "inconclusive" is 3), which a
		// pipeline tells from a failure.
		var coded interface{ ExitStatus() int }
		if errors.As(err, &coded) {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(coded.ExitStatus())
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// quietKlog sends klog's output nowhere but fatal messages to stderr, through its own flags
// (klog writes errors to stderr at its default threshold whatever its output is).
func quietKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}
