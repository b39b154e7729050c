package serverenv

// PID is the process id of the running binary, for tests that read its
// /proc entries (open file descriptors, resident memory).
func (b *Binary) PID() int { return b.cmd.Process.Pid }
