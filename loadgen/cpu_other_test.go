//go:build !linux

package loadgen

import "time"

func cpuTime() time.Duration { return 0 }
