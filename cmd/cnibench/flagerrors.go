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
		return withSuiteFlags(err, invalid, cmd)
	}
	return asFlags(err, flagOf(cmd))
}

// withSuiteFlags adds to each field of a refused suite the flag of cmd that also sets it, since
// the user may have set it either way: "repetitions (--repetitions): expected at least 2",
// "targets[0].local.proxyMode (--proxy-mode): ...". The suite's own fields are set by the
// flag of their name (flagOf); a target's are in suiteFieldFlags.
func withSuiteFlags(err error, invalid *suite.InvalidError, cmd *cobra.Command) error {
	fields, flag := suiteFieldFlags(), flagOf(cmd)
	placed := rewriteSettings(invalid.Err, func(se *setting.Error) string {
		f := ""
		if field := se.Field(); !strings.Contains(field, ".") {
			f = flag(field)
		} else if name, ok := fields[field]; ok && cmd.Flag(name) != nil {
			f = "--" + name
		}
		if f == "" {
			return ""
		}
		return se.Name + " (" + f + ")" + strings.TrimPrefix(se.Error(), se.Name)
	})
	return &flagError{msg: strings.Replace(err.Error(), invalid.Error(), placed.Error(), 1), cause: err}
}

// suiteFieldFlags maps the fields of a suite's targets (setting.Error.Field) to the flags of
// `run` that set them on every target.
func suiteFieldFlags() map[string]string {
	return map[string]string{
		"targets.local.datapath": "datapath", "targets.local.proxyMode": "proxy-mode", "targets.local.kubernetes": "kubernetes-version",
		"targets.local.cluster": "cluster", "targets.local.cri": "cri", "targets.networkPolicy": "network-policies",
		"targets.external.address": "external", "targets.external.tokenFile": "external-token-file",
		"targets.external.gatewayAddress": "external-gateway-address", "targets.external.caFile": "external-ca-file",
		"targets.secondaryNetwork": "secondary-network",
	}
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
	return rewriteSettings(err, func(se *setting.Error) string {
		if f := flag(se.Name); f != "" {
			return se.Named(f)
		}
		return ""
	})
}

// rewriteSettings rewrites, in err and in each error joined in it, the text of the first
// refused setting it carries as with says ("" keeps it), keeping the error's chain.
func rewriteSettings(err error, with func(*setting.Error) string) error {
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
			if text := with(se); text != "" {
				e = &flagError{msg: strings.Replace(e.Error(), se.Error(), text, 1), cause: e}
			}
		}
		out = append(out, e)
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}
