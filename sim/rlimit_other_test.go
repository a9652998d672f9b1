//go:build !unix

package sim

import (
	"testing"
	"time"
)

func raiseNoFile(testing.TB, uint64) {}

func cpuTime(testing.TB) time.Duration { return 0 }
