package file

import (
	"io/fs"
	"slices"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// A file that cannot be read (its mode changed to 000, its owner changed,
// an I/O error, a FIFO or socket put in its place) is not an empty file:
// nothing is known about what it holds now, so it keeps serving the
// objects it last held, and stands as a problem (logged, counted in
// wayfinder_config_errors, listed in /debug/configz) from the scan that
// finds it, which a change of mode triggers like any other change. When
// it can be read again with the content it had, that state stands again
// as it was; new content is taken in as any change is, once it has
// settled. A file that is gone (removed, renamed away, its symlink left
// dangling, a folder put in its place) is a deletion: its objects are
// removed once its absence has settled, with a warning naming them.

// unreadable returns the state of file p, which held prev and cannot be
// read now for the reason given.
func (c *Controller) unreadable(p string, prev *fileState, reason string) *fileState {
	problem := &config.Error{Source: p, Message: reason + "; serving the objects it last held"}
	good := prev
	if prev != nil && prev.good != nil {
		good = prev.good
		if len(prev.errs) > 0 && sameError(prev.errs[len(prev.errs)-1], problem) {
			// Unchanged: the same state, so a scan that finds nothing
			// new recomputes nothing.
			return prev
		}
	}
	if good == nil {
		return &fileState{errs: []*config.Error{problem}, good: &fileState{}}
	}
	st := *good
	st.errs = append(slices.Clip(good.errs), problem)
	st.good = good
	st.pending, st.stat, st.fresh = nil, statStamp{}, false
	return &st
}

// notRegular describes a config-named entry that is neither a regular file
// nor a folder.
func notRegular(mode fs.FileMode) string {
	what := "a special file"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	}
	return "cannot read file: " + what + ", not a regular file"
}
