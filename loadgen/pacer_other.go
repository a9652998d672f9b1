//go:build !linux

package loadgen

import "time"

const havePreciseSleep = false

func fineSleep(d time.Duration) { time.Sleep(d) }
