package cli

import (
	stdhtml "html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/gate/stats"
)

// shownRow is one rule as a reader sees it: the baseline and candidate values and the
// ratio, as printed (a ratio, or a change in percent).
type shownRow struct{ metric, base, cand, ratio string }

// shownNumber reads the number a cell shows and the half of its last digit's unit (how
// far rounding may have moved it); ok is false for a cell that shows none.
func shownNumber(cell string) (v, half float64, ok bool) {
	m := regexp.MustCompile(`[-+]?[0-9]+(\.[0-9]+)?`).FindString(cell)
	if m == "" {
		return 0, 0, false
	}
	v, err := strconv.ParseFloat(m, 64)
	if err != nil {
		return 0, 0, false
	}
	decimals := 0
	if _, frac, ok := strings.Cut(m, "."); ok {
		decimals = len(frac)
	}
	return v, 0.5 * math.Pow(10, -float64(decimals)), true
}

// checkShownRow: the values shown give the ratio shown, within what rounding each of
// the three allows. pct says the ratio is shown as a change in percent.
func checkShownRow(t *testing.T, where string, r shownRow, pct bool) {
	t.Helper()
	b, hb, okb := shownNumber(r.base)
	c, hc, okc := shownNumber(r.cand)
	q, hq, okq := shownNumber(r.ratio)
	if !okb || !okc || !okq || b == 0 {
		return // a side or the ratio is not shown, or no ratio can be read from a 0
	}
	if pct {
		q, hq = 1+q/100, hq/100
	}
	got := c / b
	slack := got*(hb/math.Abs(b)+hc/math.Abs(c)) + hq + 1e-9
	if math.Abs(got-q) > slack {
		t.Errorf("%s: %s shows baseline %s and candidate %s (ratio %.4f) beside %s", where, r.metric, r.base, r.cand, got, r.ratio)
	}
}

// checkShownRatios: in gate.json exactly, and in the terminal table, the comment and the
// HTML report within rounding, every rule's candidate over its baseline is the ratio
// shown beside them. terminal, comment and html may be empty (not produced).
func checkShownRatios(t *testing.T, res gate.Result, terminal, comment, html string) {
	t.Helper()
	checkFlapFigures(t, res)
	n := 0
	rules := map[string]bool{}
	for _, w := range res.Workloads {
		for _, m := range w.Metrics {
			rules[m.Metric] = true
			if m.Baseline == nil || m.Candidate == nil || m.Ratio == nil || *m.Baseline == 0 {
				continue
			}
			n++
			if got := *m.Candidate / *m.Baseline; math.Abs(got / *m.Ratio - 1) > 1e-9 {
				t.Errorf("gate.json: %s baseline %v candidate %v: %v, but ratio %v", m.Metric, *m.Baseline, *m.Candidate, got, *m.Ratio)
			}
		}
	}
	if n == 0 {
		t.Fatalf("gate.json: no rule shows a ratio: %+v", res.Workloads)
	}
	if terminal != "" {
		k := 0
		inTable := false
		for line := range strings.SplitSeq(terminal, "\n") {
			if strings.HasPrefix(line, "  metric ") && strings.Contains(line, "ratio") {
				inTable = true
				continue
			}
			cells := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
			if inTable && (!strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "   ") || len(cells) < 7) {
				inTable = false // the table ends at the first line that is not one of its rows
			}
			if !inTable {
				continue
			}
			k++
			checkShownRow(t, "terminal", shownRow{cells[0], cells[2], cells[3], cells[4]}, false)
		}
		if k == 0 {
			t.Errorf("terminal: no verdict table:\n%s", terminal)
		}
	}
	if comment != "" {
		re := regexp.MustCompile(`(?m)^\| ([a-z0-9_]+) \| ([^|]*) \| ([^|]*) \| ([^|]*) \|`)
		k := 0
		for _, g := range re.FindAllStringSubmatch(comment, -1) {
			if !rules[g[1]] {
				continue // the header, or another table's row
			}
			k++
			checkShownRow(t, "comment", shownRow{g[1], g[2], g[3], g[4]}, true)
		}
		if k == 0 {
			t.Errorf("comment: no verdict table:\n%s", comment)
		}
	}
	if html != "" {
		re := regexp.MustCompile(`<td class="mono">([a-z0-9_]+)</td><td class="n">([^<]*)</td><td class="n">([^<]*)</td><td class="n">([^<]*)</td>`)
		k := 0
		for _, g := range re.FindAllStringSubmatch(html, -1) {
			if !rules[g[1]] {
				continue
			}
			k++
			checkShownRow(t, "report", shownRow{g[1], stdhtml.UnescapeString(g[2]), stdhtml.UnescapeString(g[3]), stdhtml.UnescapeString(g[4])}, true)
		}
		if k == 0 {
			t.Errorf("report: no verdict table")
		}
	}
}

// checkFlapFigures: a warning that a rule's tolerance is narrower than its resolution
// quotes the resolution the table shows (a sequential job's warning once quoted the
// fixed interval's figure beside the sequence's in the table).
func checkFlapFigures(t *testing.T, res gate.Result) {
	t.Helper()
	fig := regexp.MustCompile(`narrower than [^±]*±([0-9]+\.[0-9])%`)
	for _, w := range res.Workloads {
		for _, m := range w.Metrics {
			for _, x := range m.Warnings {
				g := fig.FindStringSubmatch(x)
				if g == nil || !strings.HasSuffix(x, stats.FlapsOnNoise) {
					continue
				}
				if want := strconv.FormatFloat(100*m.Resolution, 'f', 1, 64); g[1] != want {
					t.Errorf("%s: the warning quotes ±%s%%, the table ±%s%%: %s", m.Metric, g[1], want, x)
				}
			}
		}
	}
}
