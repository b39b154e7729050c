package file

import (
	"io/fs"
	"syscall"
	"time"
)

// changeTime is fi's inode change time, which no write or chmod can keep
// (unlike mtime, which a tool may set back).
func changeTime(fi fs.FileInfo) time.Time {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
}
