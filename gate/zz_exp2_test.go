package gate

import (
	"os"
	"strconv"
	"sync"
	"testing"
)

func TestZZFinal(t *testing.T) {
	sd, _ := strconv.ParseFloat(os.Getenv("ZZ_SD"), 64)
	maxB, _ := strconv.Atoi(os.Getenv("ZZ_MAX"))
	share, _ := strconv.ParseFloat(os.Getenv("ZZ_SHARE"), 64)
	fut, _ := strconv.Atoi(os.Getenv("ZZ_FUT"))
	rc := swaps
	if os.Getenv("ZZ_RC") == "restarts" {
		rc = restarts
	}
	old := gpuNoise
	defer func() { gpuNoise = old }()
	gpuNoise.SpeedSD = sd
	seqCalibrations.Once = sync.Once{}
	stop := ABStop{MinBlocks: 4, MaxBlocks: maxB, FinalShare: share, FutilityFrom: fut}
	aa := summarise(seqJobs(t, 200, stop, rc, 0), rc)
	slow := summarise(seqJobs(t, 200, stop, rc, 1.2), rc)
	t.Logf("%s sd %.3f max %d share %.1f fut %d A/A %v", rc, sd, maxB, share, fut, aa)
	t.Logf("%s sd %.3f max %d share %.1f fut %d x1.2 %v", rc, sd, maxB, share, fut, slow)
}

func TestZZCalSD(t *testing.T) {
	cals := startCalibrations(t)
	for i, c := range cals {
		p := startParts([]string{"itl_p99"}, []string{"baseline", "candidate"}, c)
		ms := c.Lookup("itl_p99")
		t.Logf("cal %d: itl_p99 start sd %.4f df %g run sd %.4f within %.4f", i, p[0].sd, p[0].df, ms.RunSD, ms.WithinSD)
	}
}
