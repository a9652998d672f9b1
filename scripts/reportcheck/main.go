// Command reportcheck checks what a browser made of slogate's HTML report: the DOM
// Chromium dumped (--dump-dom) and its screenshot (--screenshot). It fails when the
// verdict table is missing or comes after the charts, when a chart is an empty frame (an
// SVG without a single data mark), when the screenshot is blank, or when a chart named
// by a further argument was not drawn. scripts/report-check.sh runs it:
//
//	reportcheck DOM.html SCREENSHOT.png [CHART-TITLE ...]
package main

import (
	"fmt"
	"image/png"
	"os"
	"regexp"
	"strings"
)

var (
	verdictTable = regexp.MustCompile(`(?s)<section id="verdicts">.*?<table class="verdicts">(.*?)</table>`)
	verdictRow   = regexp.MustCompile(`<td class="v (pass|warn|fail|neutral)">`)
	figure       = regexp.MustCompile(`(?s)<figure>(.*?)</figure>`)
	caption      = regexp.MustCompile(`(?s)<b>(.*?)</b>`)
	// The charts' data colours (report/charts.go): baseline blue, candidate vermillion,
	// E2E green. Axes, grid and text are black and grey.
	dataMark = regexp.MustCompile(`(?i)(stroke|fill):#(0072B2|D55E00|009E73)`)
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: reportcheck DOM.html SCREENSHOT.png [CHART-TITLE ...]")
		os.Exit(2)
	}
	var problems []string
	dom, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err.Error())
	}
	page := string(dom)
	t := verdictTable.FindStringSubmatch(page)
	switch {
	case t == nil:
		problems = append(problems, "no verdict table (section#verdicts > table.verdicts)")
	case len(verdictRow.FindAllString(t[1], -1)) == 0:
		problems = append(problems, "the verdict table has no verdict rows")
	case strings.Index(page, `id="verdicts"`) > strings.Index(page, "<h2>Charts</h2>"):
		problems = append(problems, "the verdict table comes after the charts")
	default:
		fmt.Printf("verdict table: %d rules\n", len(verdictRow.FindAllString(t[1], -1)))
	}
	figs := figure.FindAllStringSubmatch(page, -1)
	if len(figs) == 0 {
		problems = append(problems, "no charts")
	}
	drawn := 0
	drawnTitles := map[string]bool{}
	for _, f := range figs {
		title := "?"
		if c := caption.FindStringSubmatch(f[1]); c != nil {
			title = strings.TrimSuffix(c[1], ".")
		}
		switch {
		case strings.Contains(f[1], "<svg"):
			n := len(dataMark.FindAllString(f[1], -1))
			if n < 2 { // a legend swatch alone is not data
				problems = append(problems, fmt.Sprintf("chart %q is empty: %d data marks", title, n))
				continue
			}
			drawn++
			drawnTitles[title] = true
			fmt.Printf("chart %q: %d data marks\n", title, n)
		case strings.Contains(f[1], `class="missing"`):
			fmt.Printf("chart %q: not drawn, and the page says why\n", title)
		default:
			problems = append(problems, fmt.Sprintf("chart %q has neither a drawing nor a reason", title))
		}
	}
	if drawn == 0 {
		problems = append(problems, "not one chart was drawn")
	}
	for _, want := range os.Args[3:] {
		if !drawnTitles[want] {
			problems = append(problems, fmt.Sprintf("chart %q was not drawn", want))
		}
	}
	if err := checkShot(os.Args[2]); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		fail(strings.Join(problems, "\n"))
	}
	fmt.Printf("ok: %d charts drawn of %d\n", drawn, len(figs))
}

// checkShot fails on a screenshot that is blank: a page that did not render is white (or
// one colour) all over.
func checkShot(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return fmt.Errorf("screenshot %s: %v", path, err)
	}
	b := img.Bounds()
	var ink, colour, n int
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			n++
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				ink++
			}
			if max(r, g, bl)-min(r, g, bl) > 0x2000 {
				colour++
			}
		}
	}
	fmt.Printf("screenshot %dx%d: %.1f%% ink, %.1f%% colour\n", b.Dx(), b.Dy(), 100*float64(ink)/float64(n), 100*float64(colour)/float64(n))
	if ink*100 < n || colour == 0 {
		return fmt.Errorf("screenshot %s looks blank (%d of %d pixels inked, %d coloured)", path, ink, n, colour)
	}
	return nil
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "report-check: FAIL:\n"+msg)
	os.Exit(1)
}
