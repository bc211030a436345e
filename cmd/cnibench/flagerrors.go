package main

import (
	"errors"
	"strings"

	"github.com/cnibench/cnibench/internal/lab"
)

// clusterFlag names the `cluster create` flag that sets a local cluster's setting.
func clusterFlag(field string) string {
	switch field {
	case "cluster":
		return "--name"
	case "proxyMode":
		return "--proxy-mode"
	case "kubernetes":
		return "--kubernetes-version"
	default: // nodes, datapath, cri, runtimes, subnet, wait
		return "--" + field
	}
}

// flagError is a refused setting as the command line set it: "--nodes 0: expected ...".
type flagError struct {
	msg   string
	field *lab.FieldError
}

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return e.field }

// asFlags speaks of the flags where the library speaks of the settings they set: each refused
// setting in err (joined or wrapped) is named by its flag instead.
func asFlags(err error, flag func(field string) string) error {
	if err == nil {
		return nil
	}
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	out := make([]error, 0, len(parts))
	for _, e := range parts {
		var fe *lab.FieldError
		if errors.As(e, &fe) {
			named := flag(fe.Field) + " " + fe.Value + ": " + fe.Want
			e = &flagError{msg: strings.Replace(e.Error(), fe.Error(), named, 1), field: fe}
		}
		out = append(out, e)
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}
