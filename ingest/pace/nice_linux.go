package pace

import (
	"runtime"
	"syscall"
)

// lowerThread locks the calling goroutine to its thread and sets the
// thread's nice value to nice; it reports whether it could. An
// unprivileged process may always raise a nice value.
func lowerThread(nice int) bool {
	runtime.LockOSThread()
	return syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice) == nil
}

// threadNice is the calling thread's nice value.
func threadNice() (int, error) {
	// getpriority returns 20 - nice, to keep the value positive.
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	return 20 - prio, err
}
