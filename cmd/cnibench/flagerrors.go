package main

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/suite"
)

// executeCommand runs the command line's command and names, in its error, the flags that set
// the settings the library refused.
func executeCommand(ctx context.Context, root *cobra.Command) error {
	cmd, err := root.ExecuteContextC(ctx)
	var invalid *suite.InvalidError
	if errors.As(err, &invalid) {
		// A refused suite places its settings by their field paths (targets[0].local.nodes).
		return withSuiteFlags(err)
	}
	return asFlags(err, flagOf(cmd))
}

// withSuiteFlags adds their flags to the suite fields a refused suite names, since the user may
// have set them either way: "--repetitions / repetitions: expected at least 1",
// "targets[0].local.proxyMode (--proxy-mode): ...".
func withSuiteFlags(err error) error {
	msg := err.Error()
	for field, flag := range map[string]string{"repetitions:": "--repetitions", "duration:": "--duration", "warmup:": "--warmup", "paths[": "--paths", "pairs[": "--pairs",
		"runtimes[": "--runtimes", "precision:": "--precision", "budget:": "--budget", "margin:": "--margin", "pods:": "--pods"} {
		if strings.HasPrefix(msg, field) || strings.Contains(msg, "\n"+field) {
			msg = strings.ReplaceAll(msg, field, flag+" / "+field)
		}
	}
	for field, flag := range map[string]string{"datapath": "--datapath", "proxyMode": "--proxy-mode", "kubernetes": "--kubernetes-version", "cluster": "--cluster", "cri": "--cri"} {
		msg = strings.ReplaceAll(msg, ".local."+field+": ", ".local."+field+" ("+flag+"): ")
	}
	return &flagError{msg: msg, cause: err}
}

// flagOf names the flag of cmd that sets a setting the library refused, or "" when none of
// its flags does. A setting's flag is its name in kebab case (proxyMode: --proxy-mode), unless
// the command calls it otherwise (settingFlags).
func flagOf(cmd *cobra.Command) func(name string) string {
	return func(name string) string {
		flag, ok := cmd.Annotations[settingAnnotation+name]
		if !ok {
			flag = kebab(name)
		}
		if cmd.Flag(flag) == nil { // its own or inherited
			return ""
		}
		return "--" + flag
	}
}

// settingAnnotation prefixes a command's annotations that name the flag of a setting whose flag
// is not its name in kebab case.
const settingAnnotation = "cnibench.setting."

// settingFlags are a command's annotations naming, for each setting, the flag that sets it
// where that is not the setting's name in kebab case (cluster create's --name sets cluster).
func settingFlags(flags map[string]string) map[string]string {
	out := map[string]string{}
	for setting, flag := range flags {
		out[settingAnnotation+setting] = flag
	}
	return out
}

// kebab turns a setting's name into a flag's: networkPolicies becomes network-policies.
func kebab(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('-')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// flagError is a refused setting as the command line set it: "--nodes 0: expected ...".
type flagError struct {
	msg   string
	cause error
}

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return e.cause }

// asFlags speaks of the flags where the library speaks of the settings they set: each refused
// setting in err (joined or wrapped) that a flag sets is named by the flag instead.
func asFlags(err error, flag func(name string) string) error {
	if err == nil {
		return nil
	}
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	out := make([]error, 0, len(parts))
	for _, e := range parts {
		var se *setting.Error
		if errors.As(e, &se) {
			if f := flag(se.Name); f != "" {
				e = &flagError{msg: strings.Replace(e.Error(), se.Error(), se.Named(f), 1), cause: e}
			}
		}
		out = append(out, e)
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}
