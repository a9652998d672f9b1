package stats

import (
	"math"
	"testing"
)

func TestTQuantile(t *testing.T) {
	for _, c := range []struct{ p, df, want float64 }{
		{0.975, 1, 12.7062}, {0.975, 2, 4.3027}, {0.975, 5, 2.5706}, {0.975, 9, 2.2622},
		{0.975, 30, 2.0423}, {0.95, 4, 2.1318}, {0.975, 1e9, 1.95996},
	} {
		if got := tQuantile(c.p, c.df); math.Abs(got-c.want) > 1e-3 {
			t.Errorf("t(%v, %v) = %.4f, want %.4f", c.p, c.df, got, c.want)
		}
	}
}
