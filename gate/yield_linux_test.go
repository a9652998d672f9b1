package gate

import (
	"os"
	"strconv"
	"syscall"
)

// yieldCPU sets every thread of this process to nice 19. Linux keeps a nice value per
// thread, and a new thread takes its creator's: the runtime's later threads are made by
// these ones. It lists the threads twice, for any made while it ran.
func yieldCPU() {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return
		}
		for _, task := range tasks {
			if tid, err := strconv.Atoi(task.Name()); err == nil {
				_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, 19)
			}
		}
	}
}
