package config

import (
	"errors"
	"fmt"
	"strings"
)

// FieldError is one problem with one field of a spec. Field is a path such
// as "spec.http[0].route[1].weight".
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// FieldErrorf builds a FieldError.
func FieldErrorf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Error is a problem with a config object, located by source (file and
// document, or Kubernetes object) and key. It is what logs, metrics and the
// debug endpoints show.
type Error struct {
	// Source is where the object came from ("samples/vs.yaml#1").
	Source string
	// Key is the object, when it could be identified.
	Key Key
	// Field is the path of the offending field, when there is one.
	Field string
	// Message says what is wrong.
	Message string
	// Warning marks problems that do not reject the object (a shadowed route).
	Warning bool
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Source != "" {
		b.WriteString(e.Source)
		b.WriteString(": ")
	}
	if e.Key.Kind != 0 {
		b.WriteString(e.Key.String())
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// ErrorsFor wraps err, which may join several FieldErrors, into one Error
// per problem, each located at source and key.
func ErrorsFor(source string, key Key, err error) []*Error {
	if err == nil {
		return nil
	}
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var fe *FieldError
		if errors.As(err, &fe) {
			out = append(out, &Error{Source: source, Key: key, Field: fe.Field, Message: fe.Message})
			return
		}
		var ce *Error
		if errors.As(err, &ce) {
			out = append(out, ce)
			return
		}
		out = append(out, &Error{Source: source, Key: key, Message: err.Error()})
	}
	walk(err)
	return out
}
